// Programmatic access to the CLI's command tree (used by tests and wrappers).
export { buildProgram, VERSION } from "./program.js";
