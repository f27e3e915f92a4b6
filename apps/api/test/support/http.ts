// Tiny HTTP helpers for tests against a listening server.
export interface Res<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function request<T = any>(
  base: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown; raw?: string | Uint8Array } = {},
): Promise<Res<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Uint8Array | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : "";
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
export const basic = (key: string) => ({ authorization: `Basic ${key}` });

/** Reads /metrics once; `value(name)` is that unlabelled sample's number (the sample must be there). */
export async function scrapeMetrics(base: string) {
  const text = (await request(base, "GET", "/metrics")).text;
  return (name: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name} `));
    if (line === undefined) throw new Error(`${name} is not in /metrics`);
    return Number(line.split(" ")[1]);
  };
}

/** Runs `work` and returns what it threw (failing when it did not). */
export async function thrown(work: () => Promise<unknown>): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error("expected a failure");
}
