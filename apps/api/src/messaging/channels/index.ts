// One sender per provider type, shared by every send of the process; closed at shutdown.
import type { Senders } from "../send-chunk.ts";
import { EmailSender } from "./email.ts";
import { ExpoSender } from "./expo.ts";
import { FcmSender } from "./fcm.ts";
import { LogSender } from "./log.ts";
import type { OutboundGuard } from "../../outbound/index.ts";
import { TwilioSender } from "./twilio.ts";
import type { SenderLog } from "./types.ts";
import { WebhookSender } from "./webhook.ts";

export function createSenders(options: { guard: OutboundGuard; log?: SenderLog }): Senders & { close(): Promise<void> } {
  const { guard } = options;
  const senders: Senders = {
    Smtp: new EmailSender({ guard, log: options.log }),
    Twilio: new TwilioSender({ guard }),
    Fcm: new FcmSender({ guard }),
    Expo: new ExpoSender({ guard }),
    Webhook: new WebhookSender({ guard }),
    Log: new LogSender(),
  };
  return {
    ...senders,
    async close() {
      await Promise.all(Object.values(senders).map((s) => s.close?.()));
    },
  };
}
