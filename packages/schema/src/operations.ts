// Wire shapes of the operational endpoints: health probes and the OpenAPI document.
import { z } from "./zod.js";

export const HealthResponse = z.object({ status: z.literal("ok") });
export type HealthResponse = z.infer<typeof HealthResponse>;

/** The OpenAPI 3.1 document served at /openapi.json. */
export const OpenApiDocumentResponse = z.record(z.string(), z.unknown());
export type OpenApiDocumentResponse = z.infer<typeof OpenApiDocumentResponse>;
