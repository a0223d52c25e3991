import { describe, expect, it } from "vitest";

import type { ChannelStatus, LifecycleEvent } from "../api/types";
import {
  deadLettersGrew,
  isStopped,
  lastRanRevision,
  lifecycleLine,
  liveEventsPerSecond,
  noTasksText,
  notReportingText,
  offsetsBlockedReason,
  runningRevision,
} from "./channelView";

const task = (rows: number) => ({ id: 0, state: "RUNNING", rows_per_second: rows, lag: 0 });

function status(state: string, target: string, extra: Record<string, unknown> = {}): ChannelStatus {
  return {
    state,
    target_state: target,
    tasks: [],
    revision: 1,
    latest_revision: 1,
    ...extra,
  } as unknown as ChannelStatus;
}

describe("the channel page's words about a status", () => {
  it("shows the server's events/s (one figure for every page) only while the channel runs", () => {
    const tasks = [task(10.5), task(2)];
    const rate = { tasks, events_per_second: 5.03 };
    expect(liveEventsPerSecond(status("RUNNING", "RUNNING", rate))).toBe(5.03);
    expect(liveEventsPerSecond(status("STOPPED", "STOPPED", rate))).toBeNull();
    expect(liveEventsPerSecond(status("FAILED", "RUNNING", rate))).toBeNull();
    expect(liveEventsPerSecond(status("PAUSED", "PAUSED", rate))).toBeNull();
    expect(liveEventsPerSecond(status("RUNNING", "RUNNING", { tasks, events_per_second: null }))).toBeNull();
    expect(liveEventsPerSecond(undefined)).toBeNull();
  });

  it("never says 'not running' beside RUNNING when there are no tasks", () => {
    const running = noTasksText(status("RUNNING", "RUNNING"));
    expect(running).not.toMatch(/not running/);
    expect(running).toMatch(/RUNNING/);
    expect(noTasksText(status("STOPPED", "STOPPED"))).toBe("No tasks: the channel is stopped.");
    expect(noTasksText(status("UNASSIGNED", "RUNNING"))).toMatch(/starting/);
    expect(noTasksText(status("RUNNING", "STOPPED"))).toMatch(/stopping/);
    expect(noTasksText(status("FAILED", "RUNNING"))).toMatch(/failed/);
  });

  it("tags a revision running only while a driver runs it", () => {
    expect(runningRevision(status("RUNNING", "RUNNING"))).toBe(1);
    expect(runningRevision(status("PAUSED", "PAUSED"))).toBe(1);
    expect(runningRevision(status("STOPPED", "STOPPED"))).toBeNull();
    expect(runningRevision(status("FAILED", "RUNNING"))).toBeNull();
    expect(runningRevision(status("RUNNING", "STOPPED"))).toBeNull();
    expect(lastRanRevision(status("STOPPED", "STOPPED"))).toBe(1);
    expect(lastRanRevision(status("RUNNING", "RUNNING"))).toBeNull();
  });

  it("writes a state that did not change as 'stays', not 'X → X'", () => {
    const event = (from: string, to: string, subject = "sluice-x-1") =>
      ({ subject_type: "connector", subject_id: subject, from_state: from, to_state: to }) as LifecycleEvent;
    expect(lifecycleLine(event("RUNNING", "RUNNING"), "x")).toEqual({
      subject: "connector sluice-x-1",
      change: "stays RUNNING",
    });
    // A placement: being assigned, not "staying" unassigned.
    expect(lifecycleLine(event("UNASSIGNED", "UNASSIGNED"), "x").change).toBe("UNASSIGNED until a worker reports it");
    expect(lifecycleLine(event("UNASSIGNED", "RUNNING"), "x").change).toBe("UNASSIGNED → RUNNING");
    expect(lifecycleLine(event("", "STOPPED", "x"), "x")).toEqual({ subject: "connector", change: "∅ → STOPPED" });
  });

  it("says why offsets cannot change, without calling a starting channel STOPPED", () => {
    const starting = offsetsBlockedReason(status("STOPPED", "RUNNING"));
    expect(starting).toMatch(/starting/);
    expect(starting).not.toMatch(/it is STOPPED/);
    expect(offsetsBlockedReason(status("UNASSIGNED", "RUNNING"))).toMatch(/starting/);
    expect(offsetsBlockedReason(status("RUNNING", "STOPPED"))).toMatch(/stopping/);
    expect(offsetsBlockedReason(status("RUNNING", "RUNNING"))).toMatch(/it is RUNNING/);
    expect(offsetsBlockedReason(status("STOPPED", "STOPPED"))).toBe("");
    expect(isStopped(status("UNASSIGNED", "STOPPED"))).toBe(true);
    expect(isStopped(status("STOPPED", "RUNNING"))).toBe(false);
  });
});

describe("a channel that stopped reporting", () => {
  const since = "2026-11-28T19:00:00Z";
  const silent = status("NOT_REPORTING", "RUNNING", {
    reported_state: "RUNNING",
    not_reporting_since: since,
    report_interval: 10,
  });

  it("says since when, for how long, its last state and its interval", () => {
    const now = new Date(since).getTime() + 45_000;
    const text = notReportingText(silent, now);
    expect(text).toContain("no status for 45 s; it reports every 10 s");
    expect(text).toContain("Last reported RUNNING: what it does now is unknown.");
    expect(text).toMatch(/^Not reporting since .+ \(no status for 45 s/);
  });

  it("says nothing while it reports", () => {
    expect(notReportingText(status("RUNNING", "RUNNING"))).toBe("");
    expect(notReportingText(undefined)).toBe("");
  });

  it("shows no rate and no running revision: both are unknown", () => {
    expect(liveEventsPerSecond(silent)).toBeNull();
    expect(runningRevision(silent)).toBeNull();
  });
});

describe("the dead-letter list follows the status's count", () => {
  it("is read again when the count grows, not otherwise", () => {
    expect(deadLettersGrew(5, 6)).toBe(true);
    expect(deadLettersGrew(6, 6)).toBe(false);
    expect(deadLettersGrew(6, 0)).toBe(false); // a store that lost its count
    expect(deadLettersGrew(undefined, 3)).toBe(false); // the first status: the list is being read anyway
    expect(deadLettersGrew(3, null)).toBe(false);
  });
});
