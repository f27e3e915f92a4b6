// Message categories: a template, a broadcast or a journey message node may set one; delivery
// policies (policies.ts) may be scoped to one.
import { z } from "./zod.js";

export const MessageCategory = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9][a-z0-9_-]*$/, "lower-case letters, digits, `-` and `_`")
  .describe(
    "The message's category (e.g. `marketing`, `product`, `transactional`). Rules may be scoped to one; `transactional` messages are held only by rules that name `transactional`.",
  );
export type MessageCategory = z.infer<typeof MessageCategory>;

/** The category exempt from every rule that does not name it. */
export const TRANSACTIONAL = "transactional";
