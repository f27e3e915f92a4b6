// The embedded default provider: sends nothing; the delivery row records the rendered message.
import { NOT_SENT } from "./send-each.ts";
import type { ChannelSender, MayGo, OutgoingMessage, SendOutcome } from "./types.ts";

export class LogSender implements ChannelSender<unknown, unknown> {
  async send(messages: OutgoingMessage<unknown>[], _config: unknown, mayGo?: MayGo): Promise<SendOutcome[]> {
    return messages.map((m) => (!mayGo || mayGo(m) ? { status: "sent" } : NOT_SENT));
  }
}
