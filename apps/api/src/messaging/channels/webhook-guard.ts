// The webhook server-side request forgery guard, shared by the sender (on each request, each
// redirect hop and inside its socket's DNS lookup) and the template PUT (a warning ahead of time):
// a target that is, or resolves to, a loopback, private, link-local, unspecified, shared (CGNAT),
// multicast or reserved address is refused unless its host is allow-listed
// (TIDINGS_WEBHOOK_ALLOWED_HOSTS, exact host match, any port).
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { normalizeHost } from "../../config.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to every address it has (as `dns.lookup` with `all: true` does). */
export type WebhookResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (`dns.lookup`, so /etc/hosts counts), every address in the order it answers. */
export const systemResolver: WebhookResolver = (host) => dnsLookup(host, { all: true, verbatim: true }) as Promise<ResolvedAddress[]>;

const RANGES: [kind: string, subnets: [string, number, "ipv4" | "ipv6"][]][] = [
  [
    "unspecified",
    [
      ["0.0.0.0", 8, "ipv4"],
      ["::", 128, "ipv6"],
    ],
  ],
  [
    "loopback",
    [
      ["127.0.0.0", 8, "ipv4"],
      ["::1", 128, "ipv6"],
    ],
  ],
  [
    "private",
    [
      ["10.0.0.0", 8, "ipv4"],
      ["172.16.0.0", 12, "ipv4"],
      ["192.168.0.0", 16, "ipv4"],
      ["fc00::", 7, "ipv6"],
      ["fec0::", 10, "ipv6"],
    ],
  ],
  [
    "link-local",
    [
      ["169.254.0.0", 16, "ipv4"],
      ["fe80::", 10, "ipv6"],
    ],
  ],
  ["shared (CGNAT)", [["100.64.0.0", 10, "ipv4"]]],
  [
    "multicast",
    [
      ["224.0.0.0", 4, "ipv4"],
      ["ff00::", 8, "ipv6"],
    ],
  ],
  // 240/4 includes 255.255.255.255; ::/96 is the deprecated IPv4-compatible form (::127.0.0.1).
  [
    "reserved",
    [
      ["240.0.0.0", 4, "ipv4"],
      ["::", 96, "ipv6"],
    ],
  ],
];
const BLOCK_LISTS: [string, BlockList][] = RANGES.map(([kind, subnets]) => {
  const list = new BlockList();
  // BlockList also matches IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) against IPv4 subnets.
  for (const [net, prefix, type] of subnets) list.addSubnet(net, prefix, type);
  return [kind, list];
});

/**
 * Why an IP address may not be a webhook target (`"loopback"`, `"private"`, …), or undefined when
 * it is a public address. IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
 */
export function forbiddenAddressKind(address: string): string | undefined {
  const version = isIP(address);
  if (version === 0) return "not an IP address";
  const type = version === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of BLOCK_LISTS) if (list.check(address, type)) return kind;
  return undefined;
}

const allowHint = "; add the host to TIDINGS_WEBHOOK_ALLOWED_HOSTS to allow it";

/** What a check ahead of sending found: a refusal, or a host name that could not be resolved. */
export type WebhookUrlVerdict = { refused: string } | { unresolved: string } | undefined;

export class WebhookGuard {
  private readonly allowed: Set<string>;
  private readonly literalVerdicts = new Map<string, string | null>();

  constructor(allowedHosts: readonly string[]) {
    this.allowed = new Set(allowedHosts.map((h) => normalizeHost(h.trim()) ?? h.trim().toLowerCase()));
  }

  /** Why the URL may not be requested (scheme, IP literal), or undefined; host names are checked by `addressRefusal`. */
  refusal(url: URL): string | undefined {
    if (url.protocol !== "http:" && url.protocol !== "https:") return `scheme ${url.protocol} is not http or https`;
    const host = url.hostname;
    if (this.allowed.has(host)) return undefined;
    let verdict = this.literalVerdicts.get(host);
    if (verdict === undefined) {
      const ip = host.startsWith("[") ? host.slice(1, -1) : host;
      verdict = isIP(ip) ? (forbiddenAddressKind(ip) ?? null) : null;
      if (this.literalVerdicts.size >= 10_000) this.literalVerdicts.clear();
      this.literalVerdicts.set(host, verdict);
    }
    return verdict === null ? undefined : `${host} is a ${verdict} address${allowHint}`;
  }

  /** Why a host name resolving to these addresses may not be connected to, or undefined (always for a listed host). */
  addressRefusal(hostname: string, addresses: readonly ResolvedAddress[]): string | undefined {
    if (this.allowed.has(hostname)) return undefined;
    for (const { address } of addresses) {
      const kind = forbiddenAddressKind(address);
      if (kind) return `${hostname} resolves to ${address}, a ${kind} address${allowHint}`;
    }
    return undefined;
  }

  /**
   * The check of a URL ahead of any send (a template PUT): `refusal`, then, for a host name not
   * allow-listed, `addressRefusal` on what the resolver answers within `timeoutMs`. A name that
   * does not resolve in time is `unresolved`, never an error. The send checks again, on the
   * addresses it connects to.
   */
  async check(url: URL, options: { resolver?: WebhookResolver; timeoutMs: number }): Promise<WebhookUrlVerdict> {
    const refused = this.refusal(url);
    if (refused) return { refused };
    const host = url.hostname;
    if (this.allowed.has(host) || host.startsWith("[") || isIP(host)) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
    });
    try {
      const addresses = await Promise.race([(options.resolver ?? systemResolver)(host), timeout]);
      if (addresses === "timeout") return { unresolved: `${host} could not be resolved within ${options.timeoutMs} ms` };
      const refusedAddress = this.addressRefusal(host, addresses);
      return refusedAddress ? { refused: refusedAddress } : undefined;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException)?.code;
      return { unresolved: `${host} could not be resolved${code ? ` (${code})` : ""}` };
    } finally {
      clearTimeout(timer);
    }
  }
}
