/** Revision comparison in plain TypeScript: stable JSON text and a line diff (jsdiff). */

import { diffLines } from "diff";

import type { Revision } from "../api/types";

/** JSON with object keys sorted at every level, two-space indented: equal specs read equal. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries.map(([key, inner]) => [key, sortKeys(inner)]));
  }
  return value;
}

export type DiffKind = "added" | "removed" | "same";

export interface DiffLine {
  kind: DiffKind;
  text: string;
  /** Line number in the older text (removed and unchanged lines). */
  oldNumber: number | null;
  /** Line number in the newer text (added and unchanged lines). */
  newNumber: number | null;
}

/** Line by line, what changed from ``before`` to ``after`` (pretty-printed, keys sorted). */
export function diffSpecs(before: unknown, after: unknown): DiffLine[] {
  const lines: DiffLine[] = [];
  let oldNumber = 1;
  let newNumber = 1;
  for (const part of diffLines(prettyJson(before) + "\n", prettyJson(after) + "\n")) {
    const kind: DiffKind = part.added ? "added" : part.removed ? "removed" : "same";
    for (const text of part.value.replace(/\n$/, "").split("\n")) {
      lines.push({
        kind,
        text,
        oldNumber: kind === "added" ? null : oldNumber++,
        newNumber: kind === "removed" ? null : newNumber++,
      });
    }
  }
  return lines;
}

export interface DiffSummary {
  added: number;
  removed: number;
}

export function summarize(lines: DiffLine[]): DiffSummary {
  return {
    added: lines.filter((l) => l.kind === "added").length,
    removed: lines.filter((l) => l.kind === "removed").length,
  };
}

/**
 * The lines to show: every change with ``context`` unchanged lines around it; longer unchanged
 * runs fold into one ``null`` (a "… n unchanged lines" marker).
 */
export function withContext(lines: DiffLine[], context = 3): (DiffLine | { folded: number })[] {
  const near = new Array<boolean>(lines.length).fill(false);
  lines.forEach((line, index) => {
    if (line.kind === "same") return;
    for (let i = Math.max(0, index - context); i <= Math.min(lines.length - 1, index + context); i++) near[i] = true;
  });
  const out: (DiffLine | { folded: number })[] = [];
  let folded = 0;
  lines.forEach((line, index) => {
    if (near[index]) {
      if (folded) out.push({ folded });
      folded = 0;
      out.push(line);
    } else folded++;
  });
  if (folded) out.push({ folded });
  return out;
}

/**
 * The pair to compare first: the running revision against the latest when they differ (drift),
 * else the latest against the one before it. Numbers are [older, newer]; null when there is
 * nothing to compare.
 */
export function defaultPair(revisions: Revision[], running: number | null): [number, number] | null {
  if (revisions.length === 0) return null;
  const latest = Math.max(...revisions.map((r) => r.number));
  if (running !== null && running !== latest && revisions.some((r) => r.number === running)) {
    return [running, latest];
  }
  const older = revisions.map((r) => r.number).filter((n) => n < latest);
  if (older.length === 0) return null;
  return [Math.max(...older), latest];
}
