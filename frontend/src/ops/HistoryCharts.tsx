/** A channel's history from the server (GET channels/{name}/history/): events in/out, lag,
 * dead letters and batch duration over a chosen window, with time and value axes. */

import { useQuery } from "@tanstack/react-query";
import { useMemo, useState } from "react";

import { api, ApiError } from "../api/client";
import {
  historyCharts,
  linePath,
  maxOf,
  niceTicks,
  stepText,
  timeLabel,
  timeTicks,
  valueLabel,
  WINDOWS,
  type History,
  type Line,
  type Window,
} from "./historyChart";

const W = 640;
const H = 180;
const LEFT = 78;
const RIGHT = 12;
const TOP = 12;
const BOTTOM = 26;
const COLORS = ["var(--accent)", "var(--warn)", "#7c5cbf", "#2f9e8f", "#c2410c"];

/** One chart: value axis with the unit, time axis, a legend, one path per line. */
export function HistoryChart({
  title,
  unit,
  tickUnit = unit,
  lines,
  start,
  end,
  testId,
}: {
  title: string;
  unit: string;
  /** The unit on the value ticks (default: unit); "" for bare numbers. */
  tickUnit?: string;
  lines: Line[];
  start: number;
  end: number;
  testId?: string;
}) {
  const span = Math.max(1, end - start);
  const ticks = niceTicks(maxOf(lines.map((l) => l.points)));
  const top = ticks[ticks.length - 1] || 1;
  const x = (t: number) => LEFT + ((t - start) / span) * (W - LEFT - RIGHT);
  const y = (v: number) => H - BOTTOM - (v / top) * (H - TOP - BOTTOM);
  const offset = -new Date().getTimezoneOffset() * 60;
  const empty = lines.every((l) => l.points.every(([, v]) => v === null));
  return (
    <figure className="chart history-chart" data-testid={testId}>
      <figcaption>
        <strong>{title}</strong> <span className="small muted">({unit})</span>
        <span className="legend-row">
          {lines.map((l, i) => (
            <span key={l.label} className="small legend-item">
              <span className="swatch" style={{ background: COLORS[i % COLORS.length] }} /> {l.label}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title} in ${unit}, ${timeLabel(start, span)} to ${timeLabel(end, span)}`}>
        <g className="y-axis">
          {ticks.map((v) => (
            <g key={v}>
              <line x1={LEFT} x2={W - RIGHT} y1={y(v)} y2={y(v)} className="grid" />
              <text x={LEFT - 6} y={y(v) + 4} textAnchor="end" className="tick">
                {valueLabel(v, tickUnit).trim()}
              </text>
            </g>
          ))}
        </g>
        <g className="x-axis">
          <line x1={LEFT} x2={W - RIGHT} y1={H - BOTTOM} y2={H - BOTTOM} className="axis" />
          {timeTicks(start, end, 6, offset).map((t) => (
            <g key={t}>
              <line x1={x(t)} x2={x(t)} y1={H - BOTTOM} y2={H - BOTTOM + 4} className="axis" />
              <text x={x(t)} y={H - 8} textAnchor={x(t) > W - RIGHT - 40 ? "end" : x(t) < LEFT + 30 ? "start" : "middle"} className="tick">
                {timeLabel(t, span)}
              </text>
            </g>
          ))}
        </g>
        {lines.map((l, i) => (
          <path key={l.label} d={linePath(l.points, x, y)} className="series" style={{ stroke: COLORS[i % COLORS.length] }} />
        ))}
        {empty && (
          <text x={(LEFT + W) / 2} y={H / 2} textAnchor="middle" className="tick muted">
            No samples in this window
          </text>
        )}
      </svg>
    </figure>
  );
}

const WINDOW_KEY = "sluice.history.window";

/** The window chosen last (kept in the browser, so a reload shows the same one). */
function storedWindow(): Window {
  try {
    const saved = localStorage.getItem(WINDOW_KEY);
    return (WINDOWS as readonly string[]).includes(saved ?? "") ? (saved as Window) : "1h";
  } catch {
    return "1h";
  }
}

function useHistory(name: string, window: Window) {
  return useQuery({
    queryKey: ["history", name, window],
    queryFn: () => api<History>(`channels/${encodeURIComponent(name)}/history/?window=${window}&by=stage,rule`),
    refetchInterval: window === "1h" ? 10_000 : 60_000,
    retry: false,
  });
}

/** The window selector and the five charts. */
export function HistoryPanel({ name }: { name: string }) {
  const [window, setWindowState] = useState<Window>(storedWindow);
  const setWindow = (w: Window) => {
    setWindowState(w);
    try {
      localStorage.setItem(WINDOW_KEY, w);
    } catch {
      // storage disabled: the choice lasts until the page is left
    }
  };
  const history = useHistory(name, window);
  const data = history.data;
  const charts = useMemo(() => (data ? historyCharts(data) : []), [data]);
  return (
    <section className="panel history" aria-label="History">
      <div className="section-head">
        <h2>History</h2>
        <div role="group" aria-label="Window" className="window-picker">
          {WINDOWS.map((w) => (
            <button key={w} type="button" className={w === window ? "button primary" : "button"} aria-pressed={w === window} onClick={() => setWindow(w)}>
              {w}
            </button>
          ))}
        </div>
      </div>
      {history.error && (
        <p className="error small" role="alert">
          {history.error instanceof ApiError ? history.error.message : "The history is unavailable."}
        </p>
      )}
      {data && (
        <>
          <p className="small muted">
            Kept on the server, one point every {stepText(data.step)}; refreshed every {window === "1h" ? "10 s" : "minute"}.
          </p>
          <div className="history-grid">
            {charts.map((chart) => (
              <HistoryChart key={chart.testId} {...chart} start={data.start} end={data.end} />
            ))}
          </div>
        </>
      )}
    </section>
  );
}
