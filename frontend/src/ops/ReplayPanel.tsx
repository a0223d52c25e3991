import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";

import { api, ApiError } from "../api/client";
import { POLL_MS } from "../api/hooks";
import type { ChannelRun as ApiChannelRun } from "../api/types";
import { fmtNumber, fmtTime } from "../ui/format";
import { useCan } from "../ui/permissions";

type ChannelRun = ApiChannelRun;
type RunPage = { count: number; results: ChannelRun[] };

const FINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** A datetime-local input's value (local time, minutes) for a Date. */
function localInput(date: Date): string {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
}

/** Replays of a window of the channel's source (and redrives of its dead letters): start, follow, cancel. */
export function ReplayPanel({ name }: { name: string }) {
  const client = useQueryClient();
  const operate = useCan("operate");
  const base = `channels/${encodeURIComponent(name)}/replays/`;
  const runs = useQuery({
    queryKey: ["replays", name],
    queryFn: () => api<RunPage>(`${base}?limit=10`),
    refetchInterval: POLL_MS,
  });
  const now = new Date();
  const [start, setStart] = useState(localInput(new Date(now.getTime() - 3_600_000)));
  const [end, setEnd] = useState(localInput(now));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const refresh = () => void client.invalidateQueries({ queryKey: ["replays", name] });
  const startRun = useMutation({
    mutationFn: () =>
      api<ChannelRun>(base, {
        method: "POST",
        body: JSON.stringify({
          window: { start: new Date(start).toISOString(), end: new Date(end).toISOString() },
        }),
      }),
    onSuccess: () => setErrors({}),
    onError: (error) => {
      if (error instanceof ApiError) {
        const fields = Object.entries(error.fieldErrors()).map(([field, messages]) => [field, messages.join(" ")]);
        setErrors(fields.length > 0 ? Object.fromEntries(fields) : { "": error.message });
      } else setErrors({ "": String(error) });
    },
    onSettled: refresh,
  });
  const cancel = useMutation({
    mutationFn: (id: string) => api<ChannelRun>(`${base}${id}/`, { method: "DELETE" }),
    onSettled: refresh,
  });
  const rows = runs.data?.results ?? [];
  const disabled = !operate.allowed || startRun.isPending;

  return (
    <section className="panel" aria-labelledby="replays-title" data-testid="replays">
      <h2 id="replays-title">Replays</h2>
      <p className="small muted">
        Read a window of the source again through the current spec, beside the live channel. Replayed events
        carry the CloudEvents extension <code>sluicereplay</code>.
      </p>
      <div className="row">
        <label>
          From{" "}
          <input
            type="datetime-local"
            aria-label="Window start"
            aria-invalid={Boolean(errors["window.start"])}
            value={start}
            onChange={(e) => setStart(e.target.value)}
          />
        </label>{" "}
        <label>
          to{" "}
          <input
            type="datetime-local"
            aria-label="Window end"
            aria-invalid={Boolean(errors["window.end"])}
            value={end}
            onChange={(e) => setEnd(e.target.value)}
          />
        </label>{" "}
        <button
          type="button"
          className="btn"
          disabled={disabled}
          title={operate.allowed ? undefined : operate.reason}
          onClick={() => startRun.mutate()}
        >
          Replay
        </button>
      </div>
      {Object.entries(errors).map(([field, message]) => (
        <p key={field} className="error small" role="alert">
          {field ? `${field}: ` : ""}
          {message}
        </p>
      ))}
      <table className="table">
        <thead>
          <tr>
            <th>Kind</th>
            <th>State</th>
            <th>Window</th>
            <th className="num">Read / expected</th>
            <th>Progress</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {rows.map((run) => (
            <tr key={run.id} data-testid="replay-row">
              <td>{run.kind}</td>
              <td title={run.error || undefined}>
                {run.state}
                {run.state === "FAILED" && run.error && <div className="small muted">{run.error}</div>}
              </td>
              <td className="small">
                {run.window
                  ? `${fmtTime(run.window.start)} – ${fmtTime(run.window.end)}`
                  : run.topic || "by offsets"}
              </td>
              <td className="num">
                {fmtNumber(run.events_read)} / {run.expected === null ? "…" : fmtNumber(run.expected)}
                <div className="small muted">{fmtNumber(run.events_written)} written</div>
              </td>
              <td>
                <progress max={1} value={run.progress} aria-label={`Progress of run ${run.id}`} />{" "}
                {Math.round(run.progress * 100)}%
              </td>
              <td>
                {!FINAL.has(run.state) && (
                  <button
                    type="button"
                    className="btn"
                    disabled={!operate.allowed || cancel.isPending}
                    onClick={() => cancel.mutate(run.id)}
                  >
                    Cancel
                  </button>
                )}
              </td>
            </tr>
          ))}
          {!runs.isPending && rows.length === 0 && (
            <tr>
              <td colSpan={6} className="muted small">
                No replays yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
