/** A small two-series line chart (events/s and lag over the last samples), plain SVG. */

export interface Sample {
  at: number;
  rate: number | null;
  lag: number | null;
}

const W = 560;
const H = 140;
const PAD = 28;

function path(samples: Sample[], pick: (s: Sample) => number | null, max: number, start: number, span: number) {
  let d = "";
  samples.forEach((s) => {
    const value = pick(s);
    if (value === null) return;
    const x = PAD + ((s.at - start) / span) * (W - 2 * PAD);
    const y = H - PAD - (value / max) * (H - 2 * PAD);
    d += `${d ? "L" : "M"}${x.toFixed(1)},${y.toFixed(1)}`;
  });
  return d;
}

export function ThroughputChart({ samples }: { samples: Sample[] }) {
  const start = samples[0]?.at ?? 0;
  const end = samples[samples.length - 1]?.at ?? 1;
  const span = Math.max(1, end - start);
  const maxRate = Math.max(1, ...samples.map((s) => s.rate ?? 0));
  const maxLag = Math.max(1, ...samples.map((s) => s.lag ?? 0));
  const last = samples[samples.length - 1];
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label="Events per second and lag over the last minutes">
        <line x1={PAD} y1={H - PAD} x2={W - PAD} y2={H - PAD} className="axis" />
        <path d={path(samples, (s) => s.rate, maxRate, start, span)} className="series rate" />
        <path d={path(samples, (s) => s.lag, maxLag, start, span)} className="series lag" />
        <text x={PAD} y={14} className="legend rate">
          events/s (max {maxRate.toFixed(1)})
        </text>
        <text x={W / 2} y={14} className="legend lag">
          lag (max {maxLag.toFixed(0)})
        </text>
      </svg>
      <figcaption className="small muted">
        Last {samples.length} samples, every 2 s. Now: {last?.rate?.toFixed(1) ?? "—"} events/s, lag{" "}
        {last?.lag ?? "—"}.
      </figcaption>
    </figure>
  );
}
