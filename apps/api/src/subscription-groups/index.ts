// Subscription groups: opt-in and opt-out groups per channel, users' choices in them, and the
// signed one-click unsubscribe links of messages and their public page.
import type { PrismaClient } from "../db/client.ts";
import type { Module } from "../http/module.ts";
import { subscriptionGroupRoutes } from "./routes.ts";
import { unsubscribeRoutes } from "./unsubscribe-routes.ts";
import type { UnsubscribeKeys } from "./unsubscribe-token.ts";

export { upsertSubscriptionGroup } from "./service.ts";
export {
  signUnsubscribeToken,
  UNSUBSCRIBE_PATH,
  type UnsubscribeKeys,
  unsubscribeUrl,
  verifyUnsubscribeToken,
} from "./unsubscribe-token.ts";

export interface SubscriptionGroupDeps {
  prisma: PrismaClient;
  /** The keys unsubscribe links are signed with (TIDINGS_SECRET_KEY, and the previous one). */
  keys: UnsubscribeKeys;
  publicUrl: string;
}

export function createSubscriptionGroups(deps: SubscriptionGroupDeps) {
  return {
    module: {
      adminRoutes: subscriptionGroupRoutes({ prisma: deps.prisma }),
      publicRoutes: unsubscribeRoutes(deps),
    } satisfies Module,
  };
}
