// Body handling for the public ingestion routes: gzip/deflate bodies whatever their content
// type (RudderStack sends gzip as x-www-form-urlencoded), JSON otherwise, size limits, and a
// walk that refuses what PostgreSQL's jsonb cannot store (NUL, lone surrogates, deep nesting).
import { isUtf8 } from "node:buffer";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, badRequest } from "../http/errors.ts";

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

/** Deeper than this is refused: no real event needs it and jsonb has a recursion limit. */
export const MAX_DEPTH = 64;

/** JSON content types we read; text/plain is what browsers send to avoid a CORS preflight. */
const JSON_TYPES = /^(application\/(.+\+)?json|text\/plain)$/i;

const tooLarge = (limit: number) => new ApiError("PAYLOAD_TOO_LARGE", `Request body exceeds ${limit} bytes`);

async function decode(raw: Buffer, encoding: string, limit: number): Promise<Buffer> {
  const unzip = encoding === "gzip" || encoding === "x-gzip" ? gunzip : encoding === "deflate" ? inflate : null;
  if (!unzip) throw new ApiError("UNSUPPORTED_MEDIA_TYPE", `Unsupported Content-Encoding ${JSON.stringify(encoding)}`);
  try {
    return await unzip(raw, { maxOutputLength: limit });
  } catch (err) {
    if (err instanceof RangeError || (err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw tooLarge(limit);
    throw badRequest(`Body is not valid ${encoding} data`);
  }
}

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

/** Installs the ingestion body parser on an encapsulated Fastify instance. */
export function registerIngestBodyParser(app: FastifyInstance, maxRequestBytes: number) {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: maxRequestBytes }, async (request: FastifyRequest, raw: Buffer) => {
    const encoding = String(request.headers["content-encoding"] ?? "identity")
      .toLowerCase()
      .trim();
    let body = raw;
    if (encoding !== "identity") {
      body = await decode(raw, encoding, maxRequestBytes);
    } else {
      const type = String(request.headers["content-type"] ?? "")
        .split(";")[0]!
        .trim();
      if (type && !JSON_TYPES.test(type)) {
        throw new ApiError("UNSUPPORTED_MEDIA_TYPE", `Content-Type ${type} is not supported; send application/json`);
      }
    }
    if (body.length === 0) throw badRequest("Request body is empty");
    // Decoding would replace bad bytes with U+FFFD and store an altered event; refuse them instead.
    if (!isUtf8(body)) throw badRequest("Body is not valid UTF-8");
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      throw badRequest("Body is not valid JSON");
    }
    checkStorable(parsed);
    return parsed;
  });
}
