// Template preview: a stored template rendered for a chosen user (the render endpoint), with the
// variables that resolved to nothing flagged.
import type { RenderTemplateResponse } from "@tidings/schema";
import type { TidingsAdmin } from "@tidings/sdk";
import { type FormEvent, useState } from "react";
import { Alert } from "../parts.tsx";
import { usePoll } from "../poll.ts";

export function TemplatesPage({ admin }: { admin: TidingsAdmin }) {
  const { data: templates, error } = usePoll(async () => (await admin.templates.list({ limit: 100 }).page()).items, [admin], 10_000);
  const [templateId, setTemplateId] = useState("");
  const [userId, setUserId] = useState("");
  const [preview, setPreview] = useState<RenderTemplateResponse>();
  const [failed, setFailed] = useState<string>();
  const render = async (e: FormEvent) => {
    e.preventDefault();
    setFailed(undefined);
    try {
      setPreview(await admin.templates.render({ templateId, ...(userId.trim() ? { userId: userId.trim() } : {}) }));
    } catch (err) {
      setPreview(undefined);
      setFailed(err instanceof Error ? err.message : String(err));
    }
  };
  return (
    <section aria-labelledby="templates-title">
      <h1 id="templates-title">Templates</h1>
      <Alert message={error ?? failed} />
      <form className="filters" onSubmit={render}>
        <label>
          Template{" "}
          <select value={templateId} onChange={(e) => setTemplateId(e.target.value)} required>
            <option value="">choose…</option>
            {templates?.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          For user <input value={userId} onChange={(e) => setUserId(e.target.value)} placeholder="user id" />
        </label>
        <button type="submit" disabled={templateId === ""}>
          Preview
        </button>
      </form>
      {preview && (
        <>
          {(preview.unresolved ?? []).length > 0 && (
            <div className="warning" role="status">
              <strong>Unresolved variables</strong> (rendered as nothing):
              <ul>
                {(preview.unresolved ?? []).map((u) => (
                  <li key={`${u.path}:${u.variable}`} data-unresolved={u.variable}>
                    <code>{u.variable}</code> in {u.path}
                  </li>
                ))}
              </ul>
            </div>
          )}
          <h2>{preview.type} message</h2>
          <pre data-testid="rendered">{JSON.stringify(preview.rendered, null, 2)}</pre>
        </>
      )}
    </section>
  );
}
