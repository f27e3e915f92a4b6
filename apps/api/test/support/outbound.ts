// The outbound guard of sender tests: the doubles listen on 127.0.0.1, which only an allow-list lets a send reach.
import { OutboundGuard } from "../../src/outbound/guard.ts";

export const loopback = { guard: new OutboundGuard(["127.0.0.1"]) };
