/** What the channel page says about a status, pure (unit-tested): numbers that only mean
 * something while the channel runs, the empty task table, the revision that runs, a lifecycle
 * line, and why the offsets cannot change now. */

import type { ChannelStatus, LifecycleEvent } from "../api/types";
import { fmtTime } from "../ui/format";

/** States in which a driver is (or is about to be) running the deployed revision. */
const LIVE_STATES = new Set(["RUNNING", "PAUSED", "RESTARTING", "UNASSIGNED"]);

/** Events per second now: the server's figure (over the last 30 s, the same the list, the API
 * and /metrics give) while the channel is RUNNING; null (shown as "—") otherwise: a stopped,
 * paused or failed channel's last rate is not a rate any more. */
export function liveEventsPerSecond(status: ChannelStatus | undefined): number | null {
  if (!status || status.state !== "RUNNING") return null;
  return status.events_per_second ?? null;
}

/** The task table's line when the channel has no tasks, true to its state. */
export function noTasksText(status: ChannelStatus | undefined): string {
  if (!status) return "Loading…";
  const { state, target_state: target } = status;
  if (target === "STOPPED" && state === "STOPPED") return "No tasks: the channel is stopped.";
  if (target === "STOPPED") return `No tasks: the channel is stopping (it is ${state}).`;
  if (state === "FAILED") return "No tasks: the channel failed (see Failure below).";
  if (state === "RUNNING" || state === "PAUSED")
    return `No tasks reported yet: the channel is ${state}; its driver reports its tasks after its first batch.`;
  return `No tasks yet: the channel is starting (it is ${state}, target ${target}).`;
}

/** The revision a driver runs now; null when none does (a stopped or failed channel keeps
 * the number of the revision it last ran: that one is not "running"). */
export function runningRevision(status: ChannelStatus | undefined): number | null {
  if (!status || status.target_state === "STOPPED" || !LIVE_STATES.has(status.state)) return null;
  return status.revision ?? null;
}

/** The revision a stopped or failed channel last ran (null while one runs, or never ran). */
export function lastRanRevision(status: ChannelStatus | undefined): number | null {
  if (!status || runningRevision(status) !== null) return null;
  return status.revision ?? null;
}

/** What a NOT_REPORTING status says ("" while it reports): since when the console has had no
 * new report, how long that is, the last state reported and how often reports were promised.
 * `now`: the browser's clock, used only for "… ago" (the judgement is the server's). */
export function notReportingText(status: ChannelStatus | undefined, now = Date.now()): string {
  if (!status || status.state !== "NOT_REPORTING" || !status.not_reporting_since) return "";
  const since = new Date(status.not_reporting_since);
  const seconds = Math.max(0, Math.round((now - since.getTime()) / 1000));
  const at = fmtTime(status.not_reporting_since);
  const every = status.report_interval ? `; it reports every ${status.report_interval} s` : "";
  return (
    `Not reporting since ${at} (no status for ${seconds} s${every}). ` +
    `Last reported ${status.reported_state}: what it does now is unknown.`
  );
}

/** One line of the lifecycle timeline. An event whose state did not change says so instead of
 * "X → X": a restart that found nothing to restart "stays RUNNING". An UNASSIGNED one is a
 * placement (assigned to a worker, taken over, released from a draining one; its reason says
 * which), and the connector is UNASSIGNED only until the worker reports: the line says that
 * rather than "stays UNASSIGNED" while it is being assigned. */
export function lifecycleLine(event: LifecycleEvent, channel: string): { subject: string; change: string } {
  const subject = `${event.subject_type}${event.subject_id !== channel ? ` ${event.subject_id}` : ""}`;
  if (event.from_state && event.from_state === event.to_state && event.to_state === "UNASSIGNED")
    return { subject, change: "UNASSIGNED until a worker reports it" };
  if (event.from_state && event.from_state === event.to_state) return { subject, change: `stays ${event.to_state}` };
  return { subject, change: `${event.from_state || "∅"} → ${event.to_state || "∅"}` };
}

/** Offsets may change only while the channel is STOPPED (as in Kafka Connect's KIP-875). */
export function isStopped(status: ChannelStatus | undefined): boolean {
  return status?.target_state === "STOPPED" && (status.state === "STOPPED" || status.state === "UNASSIGNED");
}

/** Why the offsets cannot change now ("" when they can), naming what the channel is doing. */
export function offsetsBlockedReason(status: ChannelStatus | undefined): string {
  if (!status) return "Reading the channel's state…";
  if (isStopped(status)) return "";
  const { state, target_state: target } = status;
  if (target === "STOPPED") return `Offsets can change once the channel has stopped (it is stopping: ${state}).`;
  if (state === "STOPPED" || state === "UNASSIGNED")
    return `Offsets can change only while the channel is stopped: it is starting (target ${target}); stop it first.`;
  return `Offsets can change only while the channel is stopped (it is ${state}): stop it first.`;
}

/** Whether the dead-letter list must be read again now: the status (polled every 2 s) counts
 * more dead letters than when the list was last asked for. The list itself is a heavier read
 * (it scans the dead-letter target) polled only every 10 s; following the count shows a new
 * dead letter within one status poll instead of up to 10 s later, and the card's count and the
 * list's stop disagreeing meanwhile. A count that is unknown or went down (a store that lost
 * it) asks for nothing. */
export function deadLettersGrew(previous: number | null | undefined, current: number | null | undefined): boolean {
  return typeof previous === "number" && typeof current === "number" && current > previous;
}
