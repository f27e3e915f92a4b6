// The embedded default provider: sends nothing; the delivery row records the rendered message.
import type { ChannelSender, OutgoingMessage, SendOutcome } from "./types.ts";

export class LogSender implements ChannelSender<unknown, unknown> {
  async send(messages: OutgoingMessage<unknown>[]): Promise<SendOutcome[]> {
    return messages.map(() => ({ status: "sent" }));
  }
}
