// Summarizes a V8 CPU profile (node --cpu-prof, e.g. BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR"
// for a bench's server): self time by package or source file, then by function.
// In apps/api: `node --import tsx bench/cpu-profile.ts FILE.cpuprofile [N]`.
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, top = "25"] = process.argv.slice(2);
if (!file) throw new Error("usage: bench/cpu-profile.ts FILE.cpuprofile [N]");
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => {
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);

/** Where a frame's code lives: a package under node_modules, a file of ours, or V8/Node itself. */
function place(url: string): string {
  if (!url) return "(native, GC, idle)";
  const pkg = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith("node:")) return url;
  return url.replace(/^file:\/\/.*?\/(apps|packages)\//, "$1/");
}

const sum = (key: (n: ProfileNode) => string) => {
  const out = new Map<string, number>();
  for (const [id, us] of self) {
    const k = key(byId.get(id)!);
    out.set(k, (out.get(k) ?? 0) + us);
  }
  return [...out].sort((a, b) => b[1] - a[1]).slice(0, Number(top));
};
const print = (title: string, rows: [string, number][]) => {
  console.log(`\n${title}`);
  for (const [k, us] of rows)
    console.log(`${((100 * us) / total).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled`);
print(
  "self time by place",
  sum((n) => place(n.callFrame.url)),
);
print(
  "self time by function",
  sum((n) => `${n.callFrame.functionName || "(anonymous)"}  ${place(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`),
);
