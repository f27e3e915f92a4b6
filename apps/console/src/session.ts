// The admin API key lives in this tab's sessionStorage only: closing the tab signs out.
import { TidingsAdmin } from "@tidings/sdk";

const KEY = "tidings.console.adminKey";

/** An admin client for this server (the page's own origin), over the browser's fetch. */
export function adminClient(apiKey: string): TidingsAdmin {
  // The SDK's requests carry JSON text (it gzips only on Node), which the browser's fetch takes as it is.
  return new TidingsAdmin({
    apiKey,
    host: window.location.origin,
    fetch: (input, init) => window.fetch(input, init as RequestInit),
    maxRetries: 1,
  });
}

export const storedKey = () => sessionStorage.getItem(KEY);
export const storeKey = (apiKey: string) => sessionStorage.setItem(KEY, apiKey);
export const forgetKey = () => sessionStorage.removeItem(KEY);
