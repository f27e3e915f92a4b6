import "./zod.js";
export * from "./common.js";
export * from "./errors.js";
export * from "./events.js";
export * from "./workspaces.js";
export * from "./users.js";
export * from "./segments.js";
export * from "./subscription-groups.js";
export * from "./openapi/index.js";
