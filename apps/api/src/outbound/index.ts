// Outbound: the one guard of every connection a workspace can direct (webhooks, provider base URLs,
// OAuth token endpoints, SMTP hosts and ports), with its allow-list and DNS cache.
export {
  forbiddenAddressKind,
  OutboundGuard,
  type OutboundGuardOptions,
  OutboundRefusedError,
  type OutboundVerdict,
  type ResolvedAddress,
  type Resolver,
  SMTP_PORTS,
  systemResolver,
  withoutPrivateAddresses,
} from "./guard.ts";
