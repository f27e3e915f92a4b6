// @tidings/schema: the wire types and the route contracts of the Tidings API. The OpenAPI
// generator is a separate entry, `@tidings/schema/openapi`.
import "./zod.js";
export * from "./common.js";
export * from "./errors.js";
export * from "./events.js";
export * from "./workspaces.js";
export * from "./users.js";
export * from "./segments.js";
export * from "./subscription-groups.js";
export * from "./journeys.js";
export * from "./templates.js";
export * from "./providers.js";
export * from "./messaging.js";
export * from "./categories.js";
export * from "./policies.js";
export * from "./apply.js";
export * from "./suggest.js";
export * from "./operations.js";
export * from "./contracts/index.js";
