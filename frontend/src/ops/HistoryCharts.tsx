/** A channel's history from the server (GET channels/{name}/history/): events in/out, lag,
 * dead letters and batch duration over a chosen window, with time and value axes. */

import { useQuery } from "@tanstack/react-query";
import { type KeyboardEvent, type PointerEvent, useMemo, useState } from "react";

import { api, ApiError } from "../api/client";
import {
  historyCharts,
  hoverReadout,
  linePath,
  maxOf,
  nearestIndex,
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
const H = 230;
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
  // The line with the most points gives the times the pointer snaps to (all share the grid).
  const grid = lines.reduce<Line["points"]>((a, l) => (l.points.length > a.length ? l.points : a), []);
  const [hover, setHover] = useState<number | null>(null);
  const readout = hover === null ? null : hoverReadout(lines, hover, tickUnit || unit, span);
  const onPointerMove = (e: PointerEvent<SVGSVGElement>) => {
    const svg = e.currentTarget;
    const matrix = svg.getScreenCTM();
    if (!matrix || grid.length === 0) return;
    const point = new DOMPoint(e.clientX, e.clientY).matrixTransform(matrix.inverse());
    if (point.x < LEFT || point.x > W - RIGHT) return setHover(null);
    setHover(nearestIndex(grid, start + ((point.x - LEFT) / (W - LEFT - RIGHT)) * span));
  };
  // The keyboard reads the same values: arrows move along the points, Escape lets go.
  const onKeyDown = (e: KeyboardEvent<HTMLElement>) => {
    if (grid.length === 0) return;
    const last = grid.length - 1;
    const moves: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, PageUp: -10, PageDown: 10 };
    if (e.key === "Escape") return setHover(null);
    if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      return setHover(e.key === "Home" ? 0 : last);
    }
    const move = moves[e.key];
    if (move === undefined) return;
    e.preventDefault();
    setHover((h) => Math.min(last, Math.max(0, (h ?? last) + move)));
  };
  const hoverT = hover === null ? null : grid[hover]?.[0];
  return (
    <figure
      className="chart history-chart"
      data-testid={testId}
      tabIndex={0}
      aria-label={`${title}: point at the chart, or use the arrow keys, to read a value`}
      onKeyDown={onKeyDown}
      onBlur={() => setHover(null)}
    >
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
      <svg
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`${title} in ${unit}, ${timeLabel(start, span)} to ${timeLabel(end, span)}`}
        onPointerMove={onPointerMove}
        onPointerLeave={() => setHover(null)}
      >
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
              <text
                x={x(t)}
                y={H - 8}
                textAnchor={x(t) > W - RIGHT - 40 ? "end" : x(t) < LEFT + 30 ? "start" : "middle"}
                className="tick"
              >
                {timeLabel(t, span)}
              </text>
            </g>
          ))}
        </g>
        {lines.map((l, i) => (
          <path
            key={l.label}
            d={linePath(l.points, x, y)}
            className="series"
            style={{ stroke: COLORS[i % COLORS.length] }}
          />
        ))}
        {hoverT !== null && hoverT !== undefined && (
          <g className="hover" data-testid="chart-hover">
            <line x1={x(hoverT)} x2={x(hoverT)} y1={TOP} y2={H - BOTTOM} className="hover-line" />
            {lines.map((l, i) => {
              const v = hover === null ? null : l.points[hover]?.[1];
              return v === null || v === undefined ? null : (
                <circle key={l.label} cx={x(hoverT)} cy={y(v)} r={3.5} style={{ fill: COLORS[i % COLORS.length] }} />
              );
            })}
          </g>
        )}
        {empty && (
          <text x={(LEFT + W) / 2} y={H / 2} textAnchor="middle" className="tick muted">
            No samples in this window
          </text>
        )}
      </svg>
      <p className="small chart-readout" data-testid={testId ? `${testId}-readout` : undefined}>
        {readout ? (
          <>
            <strong>{readout.time}</strong> · {readout.values.join(" · ")}
          </>
        ) : (
          <span className="muted">Point at the chart to read its values.</span>
        )}
      </p>
    </figure>
  );
}

const WINDOW_KEY = "sluice.history.window";

/** Windows of an hour or less are read again every 10 s (a new point each scrape). */
function shortWindow(window: Window): boolean {
  return window === "5m" || window === "15m" || window === "1h";
}

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
    refetchInterval: shortWindow(window) ? 10_000 : 60_000,
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
            <button
              key={w}
              type="button"
              className={w === window ? "button primary" : "button"}
              aria-pressed={w === window}
              onClick={() => setWindow(w)}
            >
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
            Kept on the server, one point every {stepText(data.step)}; refreshed every{" "}
            {shortWindow(window) ? "10 s" : "minute"}.
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
