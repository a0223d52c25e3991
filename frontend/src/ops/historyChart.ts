/** Scales, ticks and labels of the history charts (pure functions, tested by Vitest). */

export type Point = [number, number | null];

export type Values = (number | null)[];

export interface HistorySeries {
  name: string;
  unit: string;
  description: string;
  values: Values;
  stages: { name: string; values: Values }[];
  rules: { name: string; values: Values }[];
}

/** GET channels/{name}/history/: one timestamp list, one value per timestamp per series. */
export interface History {
  channel: string;
  window: string;
  step: number;
  start: number;
  end: number;
  timestamps: number[];
  series: HistorySeries[];
}

/** The values of a series paired with the answer's timestamps. */
export function zipPoints(timestamps: number[], values: Values | undefined): Point[] {
  return timestamps.map((t, i) => [t, values?.[i] ?? null]);
}

/** One line of a chart: its legend label and its points. */
export interface Line {
  label: string;
  points: Point[];
}

/** What one chart of the history panel draws. */
export interface ChartSpec {
  testId: string;
  title: string;
  unit: string;
  /** The unit on the value ticks (default: unit); "" for bare numbers. */
  tickUnit?: string;
  lines: Line[];
}

/** The step as people say it: "10 s", "5 min". */
export function stepText(step: number): string {
  return step >= 60 ? `${step / 60} min` : `${step} s`;
}

/** The panel's charts for one answer: events in/out, lag, dead letters (the channel's and each
 * stage's that had any), batch duration, and the events each rule matched when there are rules. */
export function historyCharts(data: History): ChartSpec[] {
  const values = (name: string) => data.series.find((s) => s.name === name);
  const line = (label: string, v: Values | undefined): Line => ({ label, points: zipPoints(data.timestamps, v) });
  const dead = values("dead_letters");
  const rules = values("events_in")?.rules ?? [];
  const charts: ChartSpec[] = [
    {
      testId: "history-events",
      title: "Events in / out",
      unit: "events/s",
      lines: [line("in", values("events_in")?.values), line("out", values("events_out")?.values)],
    },
    { testId: "history-lag", title: "Lag", unit: "records", lines: [line("lag", values("lag")?.values)] },
    {
      testId: "history-dead-letters",
      title: "Dead letters",
      unit: `events per ${stepText(data.step)}`,
      tickUnit: "",
      lines: [
        line("channel", dead?.values),
        ...(dead?.stages ?? []).filter((s) => s.values.some((v) => v)).map((s) => line(s.name, s.values)),
      ],
    },
    {
      testId: "history-batch",
      title: "Batch duration",
      unit: "s",
      lines: [line("longest batch", values("batch_duration")?.values)],
    },
  ];
  if (rules.length > 0) {
    charts.push({
      testId: "history-rules",
      title: "Matched per rule",
      unit: "events/s",
      lines: rules.map((r) => line(r.name, r.values)),
    });
  }
  return charts;
}

/** The windows offered, shortest first: 5 and 15 minutes for what just happened (a point per
 * 10 s scrape), up to 30 days. */
export const WINDOWS = ["5m", "15m", "1h", "6h", "24h", "7d", "30d"] as const;
export type Window = (typeof WINDOWS)[number];

/** "Nice" steps for a value axis: 1, 2, 5 × 10^n. */
export function niceTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  const last = ticks[ticks.length - 1] ?? 0;
  if (last < max) ticks.push(Number((last + step).toPrecision(12)));
  return ticks;
}

const TIME_STEPS = [
  30,
  60,
  120,
  180,
  300,
  600,
  1800,
  3600,
  2 * 3600,
  3 * 3600,
  6 * 3600,
  12 * 3600,
  86400,
  2 * 86400,
  7 * 86400,
];

/** Time ticks (unix seconds) on round minutes/hours/days, about ``count`` of them. */
export function timeTicks(start: number, end: number, count = 6, offsetSeconds = 0): number[] {
  const span = Math.max(1, end - start);
  const step = TIME_STEPS.find((s) => span / s <= count) ?? 7 * 86400;
  const first = Math.ceil((start + offsetSeconds) / step) * step - offsetSeconds;
  const ticks: number[] = [];
  for (let t = first; t <= end; t += step) ticks.push(t);
  return ticks;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** A tick's label: the time of day for spans up to two days (with seconds for spans up to
 * 5 minutes, where ticks may fall on half minutes), the date beyond. */
export function timeLabel(t: number, span: number): string {
  const d = new Date(t * 1000);
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  if (span <= 300) return `${hm}:${pad(d.getSeconds())}`;
  if (span <= 2 * 86400) return hm;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** A hovered point's time, to the second (the date too beyond a day's span), in the console's
 * one absolute format (ui/format.ts fmtTime). */
export function pointTime(t: number, span: number): string {
  const d = new Date(t * 1000);
  const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (span <= 86400) return hms;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hms}`;
}

/** The index of the point nearest to time `t` in points spaced in time order (-1: none). */
export function nearestIndex(points: Point[], t: number): number {
  if (points.length === 0) return -1;
  let lo = 0;
  let hi = points.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (points[mid]![0] <= t) lo = mid;
    else hi = mid;
  }
  return Math.abs(points[hi]![0] - t) < Math.abs(points[lo]![0] - t) ? hi : lo;
}

/** What the chart says under the pointer: the point's time and each line's value there
 * ("no sample" where the store has none). */
export function hoverReadout(
  lines: Line[],
  index: number,
  unit: string,
  span: number,
): { time: string; values: string[] } | null {
  const first = lines.find((l) => l.points[index] !== undefined);
  if (index < 0 || !first) return null;
  const time = pointTime(first.points[index]![0], span);
  const values = lines.map((l) => {
    const v = l.points[index]?.[1];
    return `${l.label} ${v === null || v === undefined ? "no sample" : valueLabel(v, unit).trim()}`;
  });
  return { time, values };
}

/** A value with its unit, short: 1.2k events/s, 250 ms, 3 records. */
export function valueLabel(v: number, unit: string): string {
  if (unit === "s" && v < 1 && v > 0) return `${Number((v * 1000).toPrecision(3))} ms`;
  const abs = Math.abs(v);
  const text =
    abs >= 1e6
      ? `${Number((v / 1e6).toPrecision(3))}M`
      : abs >= 1e3
        ? `${Number((v / 1e3).toPrecision(3))}k`
        : `${Number(v.toPrecision(3))}`;
  return `${text} ${unit}`;
}

/** An SVG path through the points (a gap where a point has no value). */
export function linePath(points: Point[], x: (t: number) => number, y: (v: number) => number): string {
  let d = "";
  let pen = false;
  for (const [t, v] of points) {
    if (v === null) {
      pen = false;
      continue;
    }
    d += `${pen ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`;
    pen = true;
  }
  return d;
}

export function maxOf(lines: Point[][]): number {
  let max = 0;
  for (const points of lines) for (const [, v] of points) if (v !== null && v > max) max = v;
  return max;
}
