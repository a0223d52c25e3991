import { useState } from "react";

import { useTail } from "../api/hooks";
import type { TailPoint, TailRecord } from "../api/types";
import {
  recordBody,
  recordId,
  recordKey,
  recordSummary,
  recordTime,
  recordWhere,
  TAIL_ROWS,
  tailStatus,
  tailView,
  waitingLabel,
} from "./tail";

/** The channel's newest events where they are: a point picker (source, sink or Preview, each
 * rule's Kafka target, dead letters), Pause / Resume, rows that open to the whole record. While
 * a row is open or the tail is paused the rows stay put; newer events wait behind a button. */
export function LiveTail({ name }: { name: string }) {
  const [at, setAt] = useState<string | undefined>(undefined);
  const [paused, setPaused] = useState(false);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const [frozen, setFrozen] = useState<readonly TailRecord[] | null>(null);
  const tail = useTail(name, at, !paused, TAIL_ROWS);
  const answer = tail.data;
  const latest = answer?.records ?? [];
  const { rows, waiting, atLeast } = tailView(latest, frozen);

  /** Hold the rows as they are now (a row opened, or paused); let go when neither holds. */
  const hold = (holding: boolean) => setFrozen(holding ? (frozen ?? rows) : null);
  const toggleRow = (id: string, isOpen: boolean) => {
    const next = new Set(open);
    if (isOpen) next.add(id);
    else next.delete(id);
    if (next.size === open.size) return;
    setOpen(next);
    hold(paused || next.size > 0);
  };
  const togglePause = () => {
    setPaused(!paused);
    hold(!paused || open.size > 0);
  };
  const showWaiting = () => {
    const ids = new Set(latest.map(recordId));
    setOpen(new Set([...open].filter((id) => ids.has(id))));
    setFrozen(latest.slice(0, TAIL_ROWS));
  };
  const pick = (point: string) => {
    setAt(point);
    setOpen(new Set());
    setFrozen(null);
  };

  const points = answer?.points ?? [];
  const current = answer?.point ?? null;
  return (
    <section className="panel live-tail" aria-label="Live tail">
      <div className="tail-head">
        <h2>Live tail</h2>
        {points.length > 0 && (
          <label className="small tail-pick">
            Events at{" "}
            <select value={at ?? current?.id ?? ""} onChange={(e) => pick(e.target.value)} data-testid="tail-point">
              {points.map((p) => (
                <option key={p.id} value={p.id} disabled={!p.readable} title={p.location}>
                  {pointLabel(p)}
                </option>
              ))}
            </select>
          </label>
        )}
        {points.length > 0 && (
          <button type="button" onClick={togglePause} aria-pressed={paused} data-testid="tail-pause">
            {paused ? "Resume tail" : "Pause tail"}
          </button>
        )}
        <span className="small muted" role="status" data-testid="tail-status">
          {answer?.state === "none" ? "" : tailStatus(paused, open.size)}
        </span>
      </div>
      {current && (
        <p className="small muted tail-where" data-testid="tail-location">
          {current.location}
        </p>
      )}
      {answer && answer.state !== "ok" && (
        <p className={answer.state === "none" ? "muted small" : "error small"} role="alert" data-testid="tail-note">
          {answer.state === "unreachable" ? `Cannot read now: ${answer.note}` : answer.note}
        </p>
      )}
      {answer?.state === "ok" && answer.note && (
        <p className="small muted" data-testid="tail-note">
          {answer.note}
        </p>
      )}
      {tail.error && (
        <p className="error small" role="alert">
          Cannot read the tail: {tail.error.message}
        </p>
      )}
      {waiting > 0 && (
        <button type="button" className="tail-waiting" onClick={showWaiting} data-testid="tail-waiting">
          {waitingLabel(waiting, atLeast)}
        </button>
      )}
      <div className="tail" data-testid="live-tail" tabIndex={0} role="region" aria-label="Newest events, newest first">
        {answer?.state === "ok" && rows.length === 0 && <p className="muted small">No events here yet.</p>}
        {!answer && tail.isPending && <p className="muted small">Reading…</p>}
        {rows.map((record) => (
          <TailRow key={recordId(record)} record={record} open={open.has(recordId(record))} onToggle={toggleRow} />
        ))}
      </div>
    </section>
  );
}

function pointLabel(point: TailPoint): string {
  return point.readable ? point.label : `${point.label} (cannot be read: ${point.note})`;
}

function TailRow({
  record,
  open,
  onToggle,
}: {
  record: TailRecord;
  open: boolean;
  onToggle: (id: string, open: boolean) => void;
}) {
  const id = recordId(record);
  const where = recordWhere(record);
  const key = recordKey(record);
  return (
    <details className="tail-row" data-testid="tail-row" open={open}>
      {/* Opened and closed here, not by the browser: its toggle event comes a moment later, when
          newer rows may have arrived above this one; the click holds the rows as they are shown. */}
      <summary
        className="tail-summary"
        onClick={(e) => {
          e.preventDefault();
          onToggle(id, !open);
        }}
      >
        {/* The spaces keep the parts apart when the row is copied or read aloud. */}
        <span className="tail-time">{recordTime(record)}</span> {where && <span className="tail-pos">{where}</span>}{" "}
        {key && <span className="tail-key">{key}</span>} <span className="tail-value">{recordSummary(record)}</span>
      </summary>
      {record.headers.length > 0 && (
        <dl className="tail-headers small">
          {record.headers.map((h, i) => (
            <div key={`${h.name}-${i}`}>
              <dt>{h.name}</dt>
              <dd>{h.encoding === "base64" ? `${h.value} (base64)` : (h.value ?? "null")}</dd>
            </div>
          ))}
        </dl>
      )}
      <pre className="tail-event">{recordBody(record)}</pre>
    </details>
  );
}
