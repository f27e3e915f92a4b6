// The public unsubscribe page: GET shows a confirmation with a button, POST unsubscribes (the
// button, and RFC 8058 one-click POSTs from mail clients, whatever their body). No key: the
// signed token is the authority (signed with TIDINGS_SECRET_KEY or, after a rotation,
// TIDINGS_SECRET_KEY_PREVIOUS). A forged or expired token gets a 400 page.
import { contractsById as op } from "@tidings/schema";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { prismaExecute, sql } from "../db/sql.ts";
import type { PrismaClient } from "../db/client.ts";
import { route } from "../http/route.ts";
import { outboxKey, recordChange } from "../outbox/index.ts";
import { UNSUBSCRIBE_PATH, type UnsubscribeKeys, verifyUnsubscribeToken } from "./unsubscribe-token.ts";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escapeHtml(title)}</title></head><body style="font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem"><h1>${escapeHtml(title)}</h1>${body}</body></html>`;

function invalid(reply: FastifyReply, reason: string) {
  const why = reason === "expired" ? "This unsubscribe link has expired." : "This unsubscribe link is not valid.";
  return reply
    .code(400)
    .type("text/html; charset=utf-8")
    .send(page("Link not valid", `<p>${why}</p>`));
}

export const unsubscribeRoutes =
  (deps: { prisma: PrismaClient; keys: UnsubscribeKeys; publicUrl: string }): FastifyPluginAsync =>
  async (app) => {
    const { prisma } = deps;
    // One-click clients POST `List-Unsubscribe=One-Click` as a form; any body is accepted and ignored.
    app.addContentTypeParser("*", { parseAs: "string", bodyLimit: 10_000 }, (_req, _body, done) => done(null, undefined));

    const verified = async (token: string) => {
      const v = verifyUnsubscribeToken(deps.keys, token);
      if (!v.ok) return v;
      const group = v.payload.subscriptionGroupId
        ? await prisma.subscriptionGroup.findUnique({
            where: { workspaceId_id: { workspaceId: v.payload.workspaceId, id: v.payload.subscriptionGroupId } },
          })
        : null;
      if (!group) return { ok: false as const, reason: "malformed" };
      return { ok: true as const, payload: v.payload, group };
    };

    route(app, op["unsubscribe.page"], async ({ query, reply }) => {
      const v = await verified(query.token);
      if (!v.ok) return invalid(reply, v.reason);
      reply.type("text/html; charset=utf-8");
      return page(
        "Unsubscribe",
        `<p>Stop receiving “${escapeHtml(v.group.name)}” messages?</p><form method="post" action="${escapeHtml(`${deps.publicUrl.replace(/\/+$/, "")}${UNSUBSCRIBE_PATH}?token=${encodeURIComponent(query.token)}`)}"><button type="submit">Unsubscribe</button></form>`,
      );
    });

    route(app, op["unsubscribe.confirm"], async ({ query, reply }) => {
      const v = await verified(query.token);
      if (!v.ok) return invalid(reply, v.reason);
      const { workspaceId, userId } = v.payload;
      await prisma.$transaction(async (tx) => {
        // Only for a user who still exists (held until the commit): a link used after the user's
        // erasure writes nothing under the erased id. The page says the same either way.
        const written = await prismaExecute(
          tx,
          sql`INSERT INTO subscription_assignments (workspace_id, subscription_group_id, profile_id, subscribed, updated_at)
        SELECT workspace_id, ${v.group.id}::uuid, profile_id, false, now() FROM profiles
        WHERE workspace_id = ${workspaceId}::uuid AND profile_id = ${userId} FOR KEY SHARE
        ON CONFLICT (workspace_id, subscription_group_id, profile_id) DO UPDATE SET subscribed = false, updated_at = now()`,
        );
        if (written > 0) await recordChange(tx, workspaceId, [userId], [outboxKey.group(v.group.id)]);
      });
      reply.type("text/html; charset=utf-8");
      return page("Unsubscribed", `<p>You will no longer receive “${escapeHtml(v.group.name)}” messages.</p>`);
    });
  };
