// The one guard of every outbound connection a workspace can direct (docs/security.md): webhook
// URLs and their redirects, provider base URLs, FCM's `token_uri`, SMTP hosts and ports. A target
// that is, or resolves to, a loopback, private, link-local, unspecified, shared (CGNAT),
// multicast, NAT64, 6to4 or reserved address is refused unless its host is allow-listed
// (TIDINGS_OUTBOUND_ALLOWED_HOSTS, exact host match; TIDINGS_WEBHOOK_ALLOWED_HOSTS is the older
// name). Host names are checked inside the socket's own DNS lookup (`lookup`), on the addresses it
// then connects to, so a rebinding DNS server gets no second answer; IP literals, which sockets
// never look up, before each request (`refusal`); SMTP connects to an address the guard resolved.
import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Agent } from "undici";
import { normalizeHost } from "../config.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to every address it has (as `dns.lookup` with `all: true` does). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system resolver (`dns.lookup`, so /etc/hosts counts), every address in the order it answers. */
export const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true }) as Promise<ResolvedAddress[]>;

/** Ports an SMTP provider may use unless its host is allow-listed: SMTP, SMTPS, submission, and the common alternative. */
export const SMTP_PORTS: readonly number[] = [25, 465, 587, 2525];

type Subnet = [net: string, prefix: number, type: "ipv4" | "ipv6"];
const RANGES: [kind: string, subnets: Subnet[]][] = [
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
  // Translation prefixes carry an IPv4 address a gateway connects to, private ones included.
  [
    "NAT64",
    [
      ["64:ff9b::", 96, "ipv6"],
      ["64:ff9b:1::", 48, "ipv6"],
    ],
  ],
  ["6to4", [["2002::", 16, "ipv6"]]],
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
 * Why an IP address may not be a target (`"loopback"`, `"private"`, …), or undefined when it is a
 * public address. IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
 */
export function forbiddenAddressKind(address: string): string | undefined {
  const version = isIP(address);
  if (version === 0) return "not an IP address";
  const type = version === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of BLOCK_LISTS) if (list.check(address, type)) return kind;
  return undefined;
}

const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;
const IPV6 = /\[?\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\b\]?/gi;
/**
 * `text` (a transport error, for a delivery's reason) with every non-public IP address replaced:
 * a reason never tells a workspace what an allow-listed name resolves to inside the network.
 */
export function withoutPrivateAddresses(text: string): string {
  const hide = (found: string) => {
    const ip = found.replace(/^\[|\]$/g, "");
    return isIP(ip) !== 0 && forbiddenAddressKind(ip) ? "[internal address]" : found;
  };
  return text.replace(IPV4, hide).replace(IPV6, hide);
}

const allowHint = "; an operator may allow the host with TIDINGS_OUTBOUND_ALLOWED_HOSTS";

/** A target the guard refused: a permanent failure of the message (retrying sends it to the same place). */
export class OutboundRefusedError extends Error {
  override name = "OutboundRefusedError";
  readonly code = "ETIDINGS_OUTBOUND_REFUSED";
}

/** What a check ahead of sending found: a refusal, or a host name that could not be resolved. */
export type OutboundVerdict = { refused: string } | { unresolved: string } | undefined;

export interface OutboundGuardOptions {
  /** Resolution of host names; the system resolver by default. */
  resolver?: Resolver;
  /** How long a host name's addresses are reused for new connections. Default 10 s; 0 disables. */
  dnsCacheMs?: number;
}

/** One per process: the allow-list, the DNS cache, and the lookup every outbound socket uses. */
export class OutboundGuard {
  private readonly allowedHosts: Set<string>;
  private readonly literalVerdicts = new Map<string, string | null>();
  private readonly resolver: Resolver;
  private readonly dnsCacheMs: number;
  private readonly dnsCache = new Map<string, { expires: number; addresses: Promise<ResolvedAddress[]> }>();

  constructor(allowedHosts: readonly string[], options: OutboundGuardOptions = {}) {
    this.allowedHosts = new Set(allowedHosts.map((h) => normalizeHost(h.trim()) ?? h.trim().toLowerCase()));
    this.resolver = options.resolver ?? systemResolver;
    this.dnsCacheMs = options.dnsCacheMs ?? 10_000;
  }

  /** Whether the host (as a URL's hostname writes it) is allow-listed. */
  allowed(host: string): boolean {
    return this.allowedHosts.has(normalizeHost(host) ?? host.toLowerCase());
  }

  /** Why the URL may not be requested (scheme, IP literal), or undefined; host names are checked by `addressRefusal`. */
  refusal(url: URL): string | undefined {
    if (url.protocol !== "http:" && url.protocol !== "https:") return `scheme ${url.protocol} is not http or https`;
    return this.literalRefusal(url.hostname);
  }

  /** Why an SMTP server at host:port may not be connected to (an IP literal, a port), or undefined. */
  smtpRefusal(host: string, port: number): string | undefined {
    if (this.allowed(host)) return undefined;
    if (!SMTP_PORTS.includes(port)) return `port ${port} is not an SMTP port (${SMTP_PORTS.join(", ")})${allowHint}`;
    return this.literalRefusal(host);
  }

  private literalRefusal(host: string): string | undefined {
    if (this.allowed(host)) return undefined;
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
    if (this.allowed(hostname)) return undefined;
    for (const { address } of addresses) {
      const kind = forbiddenAddressKind(address);
      // The address itself is not said: it would tell the workspace about the server's network.
      if (kind) return `${hostname} resolves to a ${kind} address${allowHint}`;
    }
    return undefined;
  }

  /** The host's addresses, cached for `dnsCacheMs`. */
  private resolve(hostname: string): Promise<ResolvedAddress[]> {
    const now = Date.now();
    const cached = this.dnsCache.get(hostname);
    if (cached && cached.expires > now) return cached.addresses;
    const addresses = this.resolver(hostname);
    if (this.dnsCacheMs > 0) {
      if (this.dnsCache.size >= 10_000) this.dnsCache.clear();
      this.dnsCache.set(hostname, { expires: now + this.dnsCacheMs, addresses });
      addresses.catch(() => {
        if (this.dnsCache.get(hostname)?.addresses === addresses) this.dnsCache.delete(hostname);
      });
    }
    return addresses;
  }

  /** The addresses to connect to for `host` (an IP literal is its own), or OutboundRefusedError. */
  async addresses(host: string): Promise<ResolvedAddress[]> {
    const literal = host.startsWith("[") ? host.slice(1, -1) : host;
    if (isIP(literal)) {
      const refused = this.literalRefusal(host);
      if (refused) throw new OutboundRefusedError(refused);
      return [{ address: literal, family: isIP(literal) as 4 | 6 }];
    }
    const all = await this.resolve(host);
    const refused = this.addressRefusal(host, all);
    if (refused) throw new OutboundRefusedError(refused);
    return all;
  }

  /** net.connect's `lookup`: resolves, then refuses forbidden addresses of hosts not allow-listed. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    const cb = callback as (err: NodeJS.ErrnoException | null, address?: string | ResolvedAddress[], family?: number) => void;
    this.resolve(hostname).then(
      (all) => {
        const refused = this.addressRefusal(hostname, all);
        if (refused) return cb(new OutboundRefusedError(refused));
        const family = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = family ? all.filter((a) => a.family === family) : all;
        if (usable.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          err.code = "ENOTFOUND";
          return cb(err);
        }
        if (options.all) cb(null, usable);
        else cb(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => cb(err),
    );
  };

  /** An undici Agent whose sockets resolve through the guard. */
  agent(options: { connections: number; connectTimeoutMs: number }): Agent {
    return new Agent({
      connections: options.connections,
      keepAliveTimeout: 4_000,
      connect: { timeout: options.connectTimeoutMs, lookup: this.lookup },
    });
  }

  /**
   * The check of a destination ahead of any send (a PUT): its refusal, then, for a host name not
   * allow-listed, the addresses it resolves to within `timeoutMs`. A name that does not resolve
   * in time is `unresolved`, never an error. Sends check again, on the addresses they connect to.
   */
  async check(target: URL | { host: string; port: number }, options: { timeoutMs: number }): Promise<OutboundVerdict> {
    const host = target instanceof URL ? target.hostname : target.host;
    const refused = target instanceof URL ? this.refusal(target) : this.smtpRefusal(target.host, target.port);
    if (refused) return { refused };
    if (this.allowed(host) || host.startsWith("[") || isIP(host)) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
    });
    try {
      const addresses = await Promise.race([this.resolver(host), timeout]);
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
