import { describe, expect, it } from "vitest";

import { buildPolicy, describePolicy, draftOf, policyErrors } from "./restartPolicy";

const policy = { type: "on-failure", max_attempts: 5, backoff_initial_seconds: 1, backoff_max_seconds: 60 } as const;

describe("the restart policy form", () => {
  it("round-trips a policy through its draft", () => {
    expect(buildPolicy(draftOf(policy))).toEqual({ ok: true, policy });
    expect(buildPolicy({ ...draftOf(policy), type: "never", max_attempts: "3" })).toEqual({
      ok: true,
      policy: { ...policy, type: "never", max_attempts: 3 },
    });
  });

  it("puts each problem under its field, with the server's limits", () => {
    const built = buildPolicy({
      type: "on-failure",
      max_attempts: "2.5",
      backoff_initial_seconds: "10",
      backoff_max_seconds: "5",
    });
    expect(built).toEqual({
      ok: false,
      errors: {
        max_attempts: "A whole number.",
        backoff_max_seconds: "Must be at least backoff_initial_seconds (10).",
      },
    });
    const limits = buildPolicy({
      type: "on-failure",
      max_attempts: "0",
      backoff_initial_seconds: "",
      backoff_max_seconds: "1e9",
    });
    expect(limits).toEqual({
      ok: false,
      errors: {
        max_attempts: "From 1 to 1000.",
        backoff_initial_seconds: "A number.",
        backoff_max_seconds: "From 0.1 to 86400.",
      },
    });
  });

  it("reads the server's field paths and describes the policy", () => {
    expect(policyErrors({ "restart_policy.max_attempts": ["Too big."], detail: ["x"] })).toEqual({
      max_attempts: "Too big.",
      detail: "x",
    });
    expect(describePolicy(policy)).toBe("Restarted up to 5 time(s) in a row, waiting 1, 2, 4 s… (at most 60 s).");
    expect(describePolicy({ ...policy, type: "never" })).toMatch(/stays FAILED/);
  });
});
