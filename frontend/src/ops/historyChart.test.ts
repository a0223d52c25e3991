import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { HistoryChart } from "./HistoryCharts";
import { linePath, niceTicks, timeTicks, valueLabel, zipPoints, type Point } from "./historyChart";

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
    expect(linePath(points, (t) => t, (v) => v)).toBe("M0.0,1.0L10.0,2.0M30.0,4.0");
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
      createElement(HistoryChart, { title: "Lag", unit: "records", start: 0, end: 3600, lines: [{ label: "lag", points: [] }] }),
    );
    expect(html).toContain("No samples in this window");
  });
});
