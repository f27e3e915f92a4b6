// Adds `.openapi()` to zod schemas (used by the registry); imported first by index.ts.
import { extendZodWithOpenApi } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";

extendZodWithOpenApi(z);

export { z };
