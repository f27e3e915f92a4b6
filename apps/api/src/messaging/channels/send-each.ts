// How a sender takes its messages: one at a time each, `concurrency` at once (p-map), asking the
// pipeline just before each goes on the wire whether it may still go (its claim still holds).
import pMap from "p-map";
import type { MayGo, OutgoingMessage, SendOutcome } from "./types.ts";

/** The outcome of a message `mayGo` kept back: nothing was sent. */
export const NOT_SENT: SendOutcome = { status: "retry", reason: "not sent: no longer this sender's" };

/** Sends each message with `one`, `concurrency` at a time; a message `mayGo` refuses is NOT_SENT. */
export function sendEach<M extends OutgoingMessage<unknown>>(
  messages: M[],
  one: (message: M) => Promise<SendOutcome>,
  concurrency: number,
  mayGo: MayGo | undefined,
): Promise<SendOutcome[]> {
  return pMap(messages, (m) => (mayGo && !mayGo(m) ? NOT_SENT : one(m)), { concurrency });
}
