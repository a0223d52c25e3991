/** The restart policy form's logic (pure, unit-tested): drafts from a policy, and the PATCH
 * body back with each problem under its field, as the server words them. */

import type { Channel } from "../api/types";

export type RestartPolicy = Channel["restart_policy"];

export interface PolicyDraft {
  type: string;
  max_attempts: string;
  backoff_initial_seconds: string;
  backoff_max_seconds: string;
}

export function draftOf(policy: RestartPolicy): PolicyDraft {
  return {
    type: policy.type,
    max_attempts: String(policy.max_attempts),
    backoff_initial_seconds: String(policy.backoff_initial_seconds),
    backoff_max_seconds: String(policy.backoff_max_seconds),
  };
}

type Built = { ok: true; policy: RestartPolicy } | { ok: false; errors: Record<string, string> };

function number(text: string, min: number, max: number, integer: boolean): number | string {
  const value = Number(text.trim());
  if (text.trim() === "" || !Number.isFinite(value)) return "A number.";
  if (integer && !Number.isInteger(value)) return "A whole number.";
  if (value < min || value > max) return `From ${min} to ${max}.`;
  return value;
}

/** The policy a draft says, or each field's problem (the server's limits: 1–1000 attempts,
 * 0.1–3600 s initial, 0.1–86400 s at most, the cap not under the first wait). */
export function buildPolicy(draft: PolicyDraft): Built {
  const errors: Record<string, string> = {};
  const attempts = number(draft.max_attempts, 1, 1000, true);
  const initial = number(draft.backoff_initial_seconds, 0.1, 3600, false);
  const cap = number(draft.backoff_max_seconds, 0.1, 86400, false);
  if (typeof attempts === "string") errors.max_attempts = attempts;
  if (typeof initial === "string") errors.backoff_initial_seconds = initial;
  if (typeof cap === "string") errors.backoff_max_seconds = cap;
  if (typeof initial === "number" && typeof cap === "number" && cap < initial)
    errors.backoff_max_seconds = `Must be at least backoff_initial_seconds (${initial}).`;
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  return {
    ok: true,
    policy: {
      type: draft.type as RestartPolicy["type"],
      max_attempts: attempts as number,
      backoff_initial_seconds: initial as number,
      backoff_max_seconds: cap as number,
    },
  };
}

/** The server's field errors (``restart_policy.max_attempts``) by the form's field. */
export function policyErrors(fieldErrors: Record<string, string[]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [path, messages] of Object.entries(fieldErrors)) {
    const key = path.replace(/^restart_policy\.?/, "") || "";
    out[key] = [out[key], ...messages].filter(Boolean).join(" ");
  }
  return out;
}

/** One line: how the policy behaves ("never", or the attempts and the waits). */
export function describePolicy(policy: RestartPolicy): string {
  if (policy.type === "never") return "A FAILED channel stays FAILED until someone restarts it.";
  const waits = [1, 2, 3].map((n) =>
    Math.min(policy.backoff_initial_seconds * 2 ** (n - 1), policy.backoff_max_seconds),
  );
  return `Restarted up to ${policy.max_attempts} time(s) in a row, waiting ${waits.join(", ")} s… (at most ${policy.backoff_max_seconds} s).`;
}
