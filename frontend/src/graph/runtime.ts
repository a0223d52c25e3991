/**
 * A channel's runtime options (the spec's `runtime` block), free of React: the defaults a
 * spec without the block means, the effect of choosing a mode, the interval as typed, and
 * the server's errors about the block.
 */

import type { ExecutionMode, Isolation, RuntimeOptions } from "../api/types";
import { isPlainObject } from "./spec";

export const DEFAULT_RUNTIME: RuntimeOptions = {
  isolation: "shared",
  mode: "micro-batch",
  interval_seconds: null,
};

/** The bounds the server accepts for interval_seconds. */
export const MIN_INTERVAL_SECONDS = 0.1;
export const MAX_INTERVAL_SECONDS = 86_400;

export const ISOLATIONS: { value: Isolation; label: string }[] = [
  { value: "shared", label: "shared: a long-lived driver beside other channels (starts in about a second)" },
  { value: "dedicated", label: "dedicated: a Spark driver of its own (for heavy or risky channels)" },
];

export const MODES: { value: ExecutionMode; label: string }[] = [
  { value: "micro-batch", label: "micro-batch: batch after batch (the default)" },
  { value: "real-time", label: "real-time: lowest latency, stateless Kafka → Kafka only" },
  { value: "available-now", label: "available-now: process what is there, then stop (a backfill)" },
];

/**
 * The options a stored `runtime` block means, defaults filled in: a spec saved before the
 * block existed (or an imported one without it) runs shared, in micro-batch mode. Values of
 * the wrong kind read as the default (the server names them when the spec is saved).
 */
export function runtimeOf(runtime: unknown): RuntimeOptions {
  if (!isPlainObject(runtime)) return { ...DEFAULT_RUNTIME };
  const isolation = ISOLATIONS.some((i) => i.value === runtime.isolation)
    ? (runtime.isolation as Isolation)
    : DEFAULT_RUNTIME.isolation;
  const mode = MODES.some((m) => m.value === runtime.mode) ? (runtime.mode as ExecutionMode) : DEFAULT_RUNTIME.mode;
  const interval = typeof runtime.interval_seconds === "number" ? runtime.interval_seconds : null;
  return { isolation, mode, interval_seconds: interval };
}

/** The options after choosing ``mode``: available-now runs without an interval. */
export function withMode(options: RuntimeOptions, mode: ExecutionMode): RuntimeOptions {
  return { ...options, mode, interval_seconds: mode === "available-now" ? null : options.interval_seconds };
}

/**
 * The interval as typed: "" is none (null), a number is itself (the server checks its
 * bounds); anything else is undefined (not a number yet: keep what was there).
 */
export function parseInterval(text: string): number | null | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : undefined;
}

/** What the interval means in ``mode``, for the field's hint. */
export function intervalHint(mode: ExecutionMode): string {
  if (mode === "available-now") return "available-now runs without an interval.";
  if (mode === "real-time")
    return "How often progress is checkpointed: at least 5 s (empty: every 300 s). Each checkpoint pauses events for about half a second.";
  return "Start a batch at most this often (empty: as soon as the previous one ends and events wait).";
}

/**
 * The server's errors about the runtime block ("spec.runtime.mode", "spec.runtime"), keyed
 * by field ("" for the block as a whole). Errors a mode causes on a stage
 * ("spec.source.type") are on the canvas, with that stage.
 */
export function runtimeErrors(errors: Record<string, string[]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(errors)) {
    const match = path.match(/^(?:spec\.)?runtime(?:\.(.*))?$/);
    if (match) out[match[1] ?? ""] = [...(out[match[1] ?? ""] ?? []), ...messages];
  }
  return out;
}
