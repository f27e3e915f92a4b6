// @tidings/sdk — typed client for Tidings. This release ships the error model shared by the
// ingestion and admin clients; the clients themselves follow.
export { isTidingsApiError, TidingsApiError } from "./errors.js";
