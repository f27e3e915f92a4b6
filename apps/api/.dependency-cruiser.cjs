// The server's floors (docs/architecture.md), kept by `pnpm lint` (dependency-cruiser):
//   ground       lib/, db/, jobs/, config.ts, generated/ — imports nothing above it
//   toolkit      http/ — the web toolkit; knows no capability
//   capabilities one folder each, in CAPABILITIES order: a capability imports only capabilities
//                before it, and only through their index.ts (what is behind it is private)
//   root         app/ and main.ts — build the capabilities and wire them; nothing imports them
// and no import cycle anywhere (type-only imports count).

/** Capabilities from the bottom up: each may import the ones before it. */
const CAPABILITIES = [
  "outbox",
  "profiles",
  "outbound",
  "auth",
  "subscription-groups",
  "ingest",
  "retention",
  "segments",
  "templates",
  "policies",
  "messaging",
  "journeys",
  "broadcasts",
  "users",
  "apply",
];
const GROUND = "^src/(lib|db|jobs|generated)/|^src/config\\.ts$";
const TOOLKIT = "^src/http/";
const ROOT = "^src/(app/|main\\.ts$)";
const anyOf = (names) => `^src/(${names.join("|")})/`;

const floors = CAPABILITIES.map((name, i) => ({
  name: `capability-order:${name}`,
  comment: `${name} may import only the capabilities below it (${CAPABILITIES.slice(0, i).join(", ") || "none"}): this one goes up a floor`,
  severity: "error",
  from: { path: `^src/${name}/` },
  to: { path: anyOf(CAPABILITIES.slice(i + 1)) },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle (type-only imports count): split the shared part into a file both import",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "ground-imports-up",
      comment: "The ground (lib, db, jobs, config) imports nothing above it",
      severity: "error",
      from: { path: GROUND },
      to: { path: `${TOOLKIT}|${ROOT}|${anyOf(CAPABILITIES)}` },
    },
    {
      name: "toolkit-imports-capability",
      comment: "http/ is the web toolkit: it knows no capability and not the composition root",
      severity: "error",
      from: { path: TOOLKIT },
      to: { path: `${ROOT}|${anyOf(CAPABILITIES)}` },
    },
    {
      name: "capability-imports-root",
      comment: "A capability is built by the composition root (app/); it never imports it",
      severity: "error",
      from: { path: anyOf(CAPABILITIES) },
      to: { path: ROOT },
    },
    {
      name: "capability-internals",
      comment: "Another capability is imported through its index.ts only: what is behind it is private",
      severity: "error",
      from: { path: "^src/([^/]+)/" },
      to: { path: anyOf(CAPABILITIES), pathNot: ["^src/$1/", "^src/[^/]+/index\\.ts$"] },
    },
    {
      name: "unknown-folder",
      comment: "Every folder of src is on a floor: add a new capability to CAPABILITIES (.dependency-cruiser.cjs)",
      severity: "error",
      from: { path: "^src/", pathNot: `${GROUND}|${TOOLKIT}|${ROOT}|${anyOf(CAPABILITIES)}` },
      to: {},
    },
    ...floors,
  ],
  options: {
    includeOnly: "^src/",
    exclude: { path: "^src/generated/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js"] },
  },
};
