import { describe, expect, it } from "vitest";
import { isTidingsApiError, TidingsApiError } from "../src/index.js";

describe("TidingsApiError", () => {
  it("carries the envelope's code, message, request id and issues", () => {
    const err = TidingsApiError.fromResponse(400, {
      error: {
        code: "VALIDATION_FAILED",
        message: "Invalid batch",
        requestId: "r1",
        issues: [{ path: "batch.3.event", message: "required" }],
      },
    });
    expect(err).toMatchObject({
      status: 400,
      code: "VALIDATION_FAILED",
      message: "Invalid batch: batch.3.event: required",
      requestId: "r1",
    });
    expect(err.issues).toEqual([{ path: "batch.3.event", message: "required" }]);
    expect(isTidingsApiError(err)).toBe(true);
  });

  it("falls back to the status for bodies that are not the envelope", () => {
    const err = TidingsApiError.fromResponse(502, "<html>bad gateway</html>", "req-9");
    expect(err).toMatchObject({ status: 502, code: "INTERNAL", requestId: "req-9" });
    expect(isTidingsApiError(new Error("x"))).toBe(false);
  });
});
