// Body handling for the public ingestion routes: gzip/deflate bodies whatever their content
// type (RudderStack sends gzip as x-www-form-urlencoded), JSON otherwise, size limits, and the
// walk that refuses what PostgreSQL cannot store (http/storable.ts).
import { isUtf8 } from "node:buffer";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, badRequest } from "../lib/errors.ts";
import { checkStorable } from "../http/storable.ts";

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);

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
