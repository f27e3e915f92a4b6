// Every Liquid parse and render runs in a pool of worker threads (piscina, render-worker.ts), never
// on the event loop that answers requests: a template written to be slow delays its own messages
// only. Each message has one time and memory budget for all its fields (liquid.ts), and each task
// a hard deadline past which its thread is terminated: a batch that hits it is rendered again one
// message at a time, so only the message at fault fails. Previews are bounded per workspace.
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import type { ErrorIssue, MessageTemplateDefinition, RenderedFields } from "@tidings/schema";
import { Piscina } from "piscina";
import { ApiError, badRequest } from "../lib/errors.ts";
import type { RenderBudget, UnresolvedVariable } from "./liquid.ts";
import { errorText } from "../lib/errors.ts";

/** One message's inputs: what the Liquid scope holds (render-worker.ts builds it). */
export interface MessageInput {
  user: Record<string, unknown> & { id: string };
  event?: Record<string, unknown> | undefined;
  workspace: { id: string; name: string };
  /** What the unsubscribe link is signed for. */
  unsubscribe: { workspaceId: string; userId: string; subscriptionGroupId?: string | undefined };
}

export type MessageRender = { ok: true; rendered: Record<string, unknown>; unsubscribeUrl?: string } | { ok: false; reason: string };
export type PreviewRender =
  | { ok: true; rendered: RenderedFields; unresolved: UnresolvedVariable[] }
  | { ok: false; message: string; issues: ErrorIssue[] };

/** What every render thread is started with. */
export interface RenderThreadSettings {
  secretKey: string;
  publicUrl: string;
  budget: RenderBudget;
}

export interface RenderPoolOptions {
  secretKey: string;
  publicUrl: string;
  /** Render threads (default: the cores but one, at least 1, at most 4). */
  threads?: number;
  /** Per message (default 250 ms, TIDINGS_RENDER_TIME_LIMIT_MS). */
  timeMs?: number;
  /** Per message, liquidjs's counted allocations (default 10 000 000). */
  memory?: number;
  /** Previews of one workspace rendered at once in this process; more are a 429 (default 2). */
  previewsPerWorkspace?: number;
}

/** Messages per task: a batch costs a thread at most this many budgets. */
const BATCH = 25;
/** A task's deadline beyond its messages' budgets (a thread's start, structured cloning). */
const DEADLINE_SLACK_MS = 2000;
/** Heap of one render thread: a template that allocates past it ends its thread, not the process. */
const THREAD_HEAP_MB = 256;

/** In the bundle the worker is dist/render-worker.js; from the sources (tests, tsx) a bootstrap that loads the .ts through tsx. */
const workerFile = () =>
  fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./render-worker.dev.mjs" : "./render-worker.js", import.meta.url));

class DeadlineExceeded extends Error {}

export class RenderPool {
  private readonly pool: Piscina;
  private readonly timeMs: number;
  private readonly previewsPerWorkspace: number;
  private readonly previews = new Map<string, number>();

  constructor(options: RenderPoolOptions) {
    this.timeMs = options.timeMs ?? 250;
    this.previewsPerWorkspace = options.previewsPerWorkspace ?? 2;
    const threads = options.threads ?? Math.max(1, Math.min(4, availableParallelism() - 1));
    const workerData: RenderThreadSettings = {
      secretKey: options.secretKey,
      publicUrl: options.publicUrl,
      budget: { timeMs: this.timeMs, memory: options.memory ?? 10_000_000 },
    };
    this.pool = new Piscina({
      filename: workerFile(),
      workerData,
      minThreads: 1,
      maxThreads: threads,
      idleTimeout: 60_000,
      resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB },
    });
  }

  /** Runs `name` of the worker on `task`; past `deadlineMs` its thread is terminated. */
  private async run<T>(name: string, task: unknown, deadlineMs: number): Promise<T> {
    const abort = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      abort.abort();
    }, deadlineMs);
    try {
      return (await this.pool.run(task, { name, signal: abort.signal })) as T;
    } catch (err) {
      if (expired) throw new DeadlineExceeded();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Renders messages of one template for sending: one outcome per message, in order (a failure is that message's). */
  async renderMessages(definition: MessageTemplateDefinition, messages: MessageInput[]): Promise<MessageRender[]> {
    const out: MessageRender[] = [];
    for (let i = 0; i < messages.length; i += BATCH) out.push(...(await this.batch(definition, messages.slice(i, i + BATCH))));
    return out;
  }

  private async batch(definition: MessageTemplateDefinition, messages: MessageInput[]): Promise<MessageRender[]> {
    const deadline = (n: number) => n * this.timeMs + DEADLINE_SLACK_MS;
    try {
      return await this.run<MessageRender[]>("render", { definition, messages }, deadline(messages.length));
    } catch (err) {
      if (!(err instanceof DeadlineExceeded)) return messages.map(() => ({ ok: false, reason: `render error: ${errorText(err)}` }));
    }
    // One message kept the thread past every budget: each alone, so only it fails.
    const one = async (m: MessageInput): Promise<MessageRender> => {
      try {
        return (await this.run<MessageRender[]>("render", { definition, messages: [m] }, deadline(1)))[0]!;
      } catch (err) {
        const reason = err instanceof DeadlineExceeded ? `ran past its ${this.timeMs} ms time budget` : errorText(err);
        return { ok: false, reason: `render error: ${reason}` };
      }
    };
    const results: MessageRender[] = [];
    for (const m of messages) results.push(await one(m));
    return results;
  }

  /**
   * The render preview of one message: the fields, and the variables that resolve to nothing; a
   * template that does not render (or runs out of its budget) is a 400 naming the field.
   */
  async preview(
    workspaceId: string,
    definition: MessageTemplateDefinition,
    message: MessageInput,
    prefix: string,
  ): Promise<{ rendered: RenderedFields; unresolved: UnresolvedVariable[] }> {
    const running = this.previews.get(workspaceId) ?? 0;
    if (running >= this.previewsPerWorkspace) {
      throw new ApiError(
        "RATE_LIMITED",
        `At most ${this.previewsPerWorkspace} renders of a workspace run at once; retry shortly`,
        undefined,
        {
          "retry-after": "1",
        },
      );
    }
    this.previews.set(workspaceId, running + 1);
    try {
      const out = await this.run<PreviewRender>("preview", { definition, message, prefix }, this.timeMs + DEADLINE_SLACK_MS).catch(
        (err) => {
          if (err instanceof DeadlineExceeded)
            throw badRequest("The template does not render", [{ path: prefix, message: `ran past its ${this.timeMs} ms time budget` }]);
          throw err;
        },
      );
      if (!out.ok) throw badRequest(out.message, out.issues);
      return { rendered: out.rendered, unresolved: out.unresolved };
    } finally {
      const left = (this.previews.get(workspaceId) ?? 1) - 1;
      if (left > 0) this.previews.set(workspaceId, left);
      else this.previews.delete(workspaceId);
    }
  }

  /** Liquid syntax errors of a definition, paths under `prefix` (a parse too long for its deadline is one). */
  async syntaxIssues(prefix: string, definition: MessageTemplateDefinition): Promise<ErrorIssue[]> {
    try {
      return await this.run<ErrorIssue[]>("check", { definition, prefix }, this.timeMs * 4 + DEADLINE_SLACK_MS);
    } catch (err) {
      if (err instanceof DeadlineExceeded) return [{ path: prefix, message: "the template takes too long to parse" }];
      throw err;
    }
  }

  async close() {
    await this.pool.destroy();
  }
}
