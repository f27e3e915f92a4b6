// Sign-in with an admin API key: checked against the server, then kept for this tab only.
import type { TidingsAdmin } from "@tidings/sdk";
import { type FormEvent, useState } from "react";
import { Alert } from "../parts.tsx";
import { adminClient, storeKey } from "../session.ts";

export function SignIn({ onSignedIn }: { onSignedIn: (admin: TidingsAdmin) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    const admin = adminClient(key.trim());
    try {
      await admin.journeys.list({ limit: 1 }).page();
      storeKey(key.trim());
      onSignedIn(admin);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="sign-in">
      <h1>Tidings console</h1>
      <form onSubmit={submit}>
        <label htmlFor="key">Admin API key</label>
        <input id="key" type="password" autoComplete="off" value={key} onChange={(e) => setKey(e.target.value)} required />
        <p className="hint">Kept in this browser tab only; closing the tab signs you out.</p>
        <button type="submit" disabled={busy || key.trim() === ""}>
          Sign in
        </button>
        <Alert message={error} />
      </form>
    </main>
  );
}
