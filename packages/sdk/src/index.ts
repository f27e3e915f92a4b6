// @tidings/sdk — typed clients for Tidings: `Tidings` sends events (queued or `sendBatch`, retried), and
// `TidingsAdmin` calls the admin API with one method per operation of the route contracts.
export { ADMIN_DEFAULTS, type AdminRequestInput, TidingsAdmin, type TidingsAdminOptions } from "./admin/client.js";
export { Paginated } from "./admin/paginate.js";
export type {
  AdminApi,
  AdminArgs,
  AdminBody,
  AdminContract,
  AdminContractOf,
  AdminHelpers,
  AdminItem,
  AdminMethod,
  AdminOperationId,
  AdminQuery,
  AdminResponse,
  AdminResult,
  ListPage,
  WaitOptions,
} from "./admin/types.js";
export { type ClientErrorCode, isTidingsApiError, TidingsApiError, type TidingsErrorCode } from "./errors.js";
export type { FetchLike } from "./http.js";
export { Tidings } from "./ingest/client.js";
export {
  type AliasEvent,
  type BatchEventError,
  type BatchResult,
  type GroupEvent,
  type IdentifyEvent,
  type IngestErrorHandler,
  INGEST_DEFAULTS,
  type PageEvent,
  type ScreenEvent,
  type TidingsEvent,
  type TidingsEventInput,
  type TidingsOptions,
  type TidingsStats,
  type TrackEvent,
} from "./ingest/types.js";
export { VERSION } from "./version.js";
