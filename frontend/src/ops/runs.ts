/** Pure logic of replays and redrives: the confirmation naming their live targets, their
 * progress line, and the mark of a dead letter already redriven. */

import type { components } from "../api/schema";
import { fmtNumber, fmtTime } from "../ui/format";

type Schemas = components["schemas"];
export type RunTarget = Schemas["RunTarget"];
export type RunTargets = Schemas["RunTargets"];
export type Redriven = Schemas["Redriven"];

/** The counts of a run, as the API gives them. */
export interface RunCounts {
  state: string;
  expected: number | null;
  events_read: number;
  events_written: number;
  events_failed: number;
}

export const FINAL_RUN_STATES = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** The targets others read (a run into them needs a confirmation). */
export function liveTargets(targets: RunTarget[]): RunTarget[] {
  return targets.filter((target) => target.live);
}

/** What the confirmation says before a replay or redrive writes anything. */
export function confirmLead(verb: "replay" | "redrive", targets: RunTarget[]): string {
  const live = liveTargets(targets);
  const what = verb === "replay" ? "the window's events" : "the selected dead letters' events";
  if (live.length === 0) return `This ${verb} writes ${what} only into the console's live tail.`;
  const count = live.length === 1 ? "1 live target" : `${live.length} live targets`;
  return (
    `This ${verb} writes ${what} again into ${count}. Their consumers get them a second time ` +
    `(same event ids); each carries sluicereplay = the run id and sluicerun = ${verb}.`
  );
}

/** The confirming button's words, naming how many live targets it writes into. */
export function confirmButton(verb: "replay" | "redrive", targets: RunTarget[]): string {
  const live = liveTargets(targets).length;
  const Verb = verb === "replay" ? "Replay" : "Redrive";
  if (live === 0) return `${Verb} now`;
  return `${Verb} into ${live === 1 ? "1 live target" : `${live} live targets`}`;
}

/** The percentage of a run done, from the very counts the line shows (100 once SUCCEEDED). */
export function runPercent(run: RunCounts): number {
  if (run.state === "SUCCEEDED") return 100;
  if (!run.expected) return 0;
  return Math.max(0, Math.min(100, Math.floor((run.events_read / run.expected) * 100)));
}

/** "N of M read · K written · F failed again · P %": every number from the same run. */
export function runProgressText(run: RunCounts, kind: string): string {
  const expected = run.expected === null ? "…" : fmtNumber(run.expected);
  const parts = [`${fmtNumber(run.events_read)} of ${expected} read`, `${fmtNumber(run.events_written)} written`];
  if (run.events_failed > 0) {
    parts.push(`${fmtNumber(run.events_failed)} ${kind === "redrive" ? "failed again" : "failed"}`);
  }
  parts.push(`${runPercent(run)} %`);
  return parts.join(" · ");
}

/** "Redriven 30/11/2026, 07:40:00 by user:alice (run 1a2b3c4d): 1 failed again, 1 written". */
export function redrivenText(mark: Redriven): string {
  return `Redriven ${fmtTime(mark.at)} by ${mark.by} (run ${mark.run.slice(0, 8)}): ${mark.outcome}`;
}

/** What the confirmation warns of when some of the letters were redriven already. */
export function redrivenAgainWarning(marks: (Redriven | null | undefined)[]): string {
  const done = marks.filter((mark): mark is Redriven => Boolean(mark));
  if (done.length === 0) return "";
  const which = done.length === 1 ? "1 of them was" : `${done.length} of them were`;
  const running = done.some((mark) => mark.state === "PENDING" || mark.state === "RUNNING");
  return (
    `${which} redriven already${running ? " (a redrive of them is still running)" : ""}: ` +
    "redriving again writes their events again into the targets."
  );
}
