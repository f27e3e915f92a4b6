// What PostgreSQL cannot store, refused at the door for every JSON body (ingestion and the admin
// API alike): NUL characters (text and jsonb cannot hold them), unpaired surrogates (not Unicode:
// text would store them altered, jsonb refuses them) and nesting deeper than jsonb should carry.
import { badRequest } from "../lib/errors.ts";

/** Deeper than this is refused: no real body needs it and jsonb has a recursion limit. */
export const MAX_DEPTH = 64;

function jsonPath(path: (string | number)[]): string {
  return path.length ? path.join(".") : "(body)";
}

/**
 * Refuses values jsonb cannot store, and drops the keys secure-json-parse would (`__proto__`, and
 * `constructor` holding a `prototype`) so no later merge can change an object's prototype. The
 * walk recurses at most MAX_DEPTH levels, so hostile nesting cannot overflow the stack.
 */
export function checkStorable(root: unknown): void {
  const path: (string | number)[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === "string") {
      checkString(value, path);
      return;
    }
    if (value === null || typeof value !== "object") return;
    if (path.length >= MAX_DEPTH)
      throw badRequest(`Nesting deeper than ${MAX_DEPTH} levels`, [{ path: jsonPath(path), message: "nested too deeply" }]);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        path.push(i);
        walk(value[i]);
        path.pop();
      }
      return;
    }
    const obj = value as Record<string, unknown>;
    for (const k in obj) {
      const v = obj[k];
      if (k === "__proto__" || (k === "constructor" && v !== null && typeof v === "object" && Object.hasOwn(v, "prototype"))) {
        delete obj[k];
        continue;
      }
      checkString(k, path);
      path.push(k);
      walk(v);
      path.pop();
    }
  };
  walk(root);
}

function checkString(s: string, path: (string | number)[]) {
  if (s.includes("\u0000")) {
    throw badRequest("Strings may not contain NUL (\\u0000) characters", [{ path: jsonPath(path), message: "contains a NUL character" }]);
  }
  if (!s.isWellFormed()) {
    throw badRequest("Strings must be valid Unicode", [{ path: jsonPath(path), message: "contains an unpaired surrogate" }]);
  }
}
