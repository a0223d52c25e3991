import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { HistoryChart } from "./HistoryCharts";
import {
  historyCharts,
  hoverReadout,
  linePath,
  nearestIndex,
  niceTicks,
  pointTime,
  stepText,
  timeTicks,
  timeLabel,
  valueLabel,
  WINDOWS,
  zipPoints,
  type History,
  type HistorySeries,
  type Point,
} from "./historyChart";

describe("niceTicks", () => {
  it("steps by 1, 2 or 5 × 10^n and covers the maximum", () => {
    expect(niceTicks(47)).toEqual([0, 20, 40, 60]);
    expect(niceTicks(0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(0)).toEqual([0, 1]);
    const ticks = niceTicks(12345);
    expect(ticks[0]).toBe(0);
    expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(12345);
  });
});

describe("timeTicks", () => {
  it("puts about six ticks on round times of the window", () => {
    const end = 1_700_000_000;
    const hour = timeTicks(end - 3600, end);
    expect(hour.length).toBeGreaterThanOrEqual(4);
    expect(hour.length).toBeLessThanOrEqual(7);
    expect(hour.every((t) => t % 600 === 0)).toBe(true);
    const month = timeTicks(end - 30 * 86400, end);
    expect(month.every((t, i) => i === 0 || t - (month[i - 1] ?? 0) === 7 * 86400)).toBe(true);
  });
});

describe("valueLabel", () => {
  it("shortens and keeps the unit", () => {
    expect(valueLabel(1500, "events/s")).toBe("1.5k events/s");
    expect(valueLabel(0.25, "s")).toBe("250 ms");
    expect(valueLabel(3, "records")).toBe("3 records");
  });
});

describe("linePath", () => {
  it("breaks the line where a point has no value", () => {
    const points: Point[] = [
      [0, 1],
      [10, 2],
      [20, null],
      [30, 4],
    ];
    expect(
      linePath(
        points,
        (t) => t,
        (v) => v,
      ),
    ).toBe("M0.0,1.0L10.0,2.0M30.0,4.0");
  });
});

describe("zipPoints", () => {
  it("pairs each value with the answer's timestamp, null where missing", () => {
    expect(zipPoints([10, 20, 30], [1, null])).toEqual([
      [10, 1],
      [20, null],
      [30, null],
    ]);
    expect(zipPoints([10], undefined)).toEqual([[10, null]]);
  });
});

describe("HistoryChart", () => {
  it("renders value ticks with the unit, time ticks and one path per line", () => {
    const start = 1_700_000_000 - 3600;
    const points: Point[] = Array.from({ length: 361 }, (_, i) => [start + i * 10, 40 + (i % 5)]);
    const html = renderToStaticMarkup(
      createElement(HistoryChart, {
        title: "Events in / out",
        unit: "events/s",
        start,
        end: start + 3600,
        lines: [
          { label: "in", points },
          { label: "out", points: points.map(([t, v]) => [t, (v ?? 0) / 2] as Point) },
        ],
      }),
    );
    expect(html).toContain("60 events/s"); // the top tick covers the maximum, 44
    expect(html).toContain('class="x-axis"');
    expect((html.match(/class="tick"/g) ?? []).length).toBeGreaterThan(6);
    expect(html).toMatch(/\d\d:\d\d/);
    expect((html.match(/<path /g) ?? []).length).toBe(2);
    expect(html).not.toContain("No samples");
  });

  it("says so when the window has no samples", () => {
    const html = renderToStaticMarkup(
      createElement(HistoryChart, {
        title: "Lag",
        unit: "records",
        start: 0,
        end: 3600,
        lines: [{ label: "lag", points: [] }],
      }),
    );
    expect(html).toContain("No samples in this window");
  });
});

describe("historyCharts", () => {
  const series = (name: string, values: (number | null)[], extra: Partial<HistorySeries> = {}): HistorySeries => ({
    name,
    unit: "u",
    description: "",
    values,
    stages: [],
    rules: [],
    ...extra,
  });
  const answer = (rules: HistorySeries["rules"]): History => ({
    channel: "c",
    window: "7d",
    step: 300,
    start: 0,
    end: 600,
    timestamps: [0, 300, 600],
    series: [
      series("events_in", [1, 2, 3], { rules }),
      series("events_out", [1, null, 2]),
      series("lag", [5, 6, 7]),
      series("dead_letters", [0, 1, 0], {
        stages: [
          { name: "transforms[0]", values: [0, 1, 0] },
          { name: "sink", values: [0, 0, null] },
        ],
      }),
      series("batch_duration", [0.2, 0.3, 0.25]),
    ],
  });

  it("draws events in/out, lag, dead letters per step and batch duration on the answer's timestamps", () => {
    const charts = historyCharts(answer([]));
    expect(charts.map((c) => c.testId)).toEqual([
      "history-events",
      "history-lag",
      "history-dead-letters",
      "history-batch",
    ]);
    const [events, , dead] = charts;
    expect(events?.lines.map((l) => l.label)).toEqual(["in", "out"]);
    expect(events?.lines[1]?.points).toEqual([
      [0, 1],
      [300, null],
      [600, 2],
    ]);
    // Only stages that had dead letters get a line; the unit names the step, ticks are bare.
    expect(dead?.lines.map((l) => l.label)).toEqual(["channel", "transforms[0]"]);
    expect(dead?.unit).toBe("events per 5 min");
    expect(dead?.tickUnit).toBe("");
  });

  it("adds the events each rule matched when the channel is a bus", () => {
    const charts = historyCharts(answer([{ name: "big", values: [1, 1, 1] }]));
    expect(charts.at(-1)?.testId).toBe("history-rules");
    expect(charts.at(-1)?.lines.map((l) => l.label)).toEqual(["big"]);
  });

  it("says the step as people do", () => {
    expect(stepText(10)).toBe("10 s");
    expect(stepText(300)).toBe("5 min");
  });
});

describe("short windows", () => {
  it("offers 5 and 15 minutes before the hour", () => {
    expect(WINDOWS.slice(0, 3)).toEqual(["5m", "15m", "1h"]);
  });

  it("ticks a 5-minute window every minute or half minute, labelled to the second", () => {
    const end = 1_700_000_000;
    const ticks = timeTicks(end - 300, end);
    expect(ticks.length).toBeGreaterThanOrEqual(4);
    expect(ticks.length).toBeLessThanOrEqual(7);
    expect(ticks.every((t) => t % 60 === 0)).toBe(true);
    expect(timeLabel(ticks[0]!, 300)).toMatch(/^\d\d:\d\d:00$/);
    expect(timeLabel(ticks[0]!, 3600)).toMatch(/^\d\d:\d\d$/);
    const quarter = timeTicks(end - 900, end);
    expect(quarter.length).toBeGreaterThanOrEqual(4); // every 3 minutes, not three ticks in all
  });
});

describe("hover values", () => {
  const start = 1_700_000_000;
  const points: Point[] = [0, 1, 2, 3].map((i) => [start + i * 10, i === 2 ? null : i * 1.5]);

  it("snaps to the nearest point in time", () => {
    expect(nearestIndex(points, start - 100)).toBe(0);
    expect(nearestIndex(points, start + 14)).toBe(1);
    expect(nearestIndex(points, start + 16)).toBe(2);
    expect(nearestIndex(points, start + 1000)).toBe(3);
    expect(nearestIndex([], start)).toBe(-1);
  });

  it("reads each line's value and the time under the pointer", () => {
    const lines = [
      { label: "in", points },
      { label: "out", points: points.map(([t, v]) => [t, v === null ? null : v / 3] as Point) },
    ];
    const at = new Date(start * 1000 + 10_000);
    const hms = [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
    expect(hoverReadout(lines, 1, "events/s", 3600)).toEqual({
      time: hms,
      values: ["in 1.5 events/s", "out 0.5 events/s"],
    });
    expect(hoverReadout(lines, 2, "events/s", 3600)?.values).toEqual(["in no sample", "out no sample"]);
    expect(hoverReadout(lines, -1, "events/s", 3600)).toBeNull();
    expect(pointTime(start, 7 * 86400)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
  });
});
