import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";

import { api, ApiError } from "../api/client";
import { POLL_MS } from "../api/hooks";
import type { ChannelRun as ApiChannelRun } from "../api/types";
import { fmtTime } from "../ui/format";
import { useCan } from "../ui/permissions";
import { RunConfirm } from "./RunConfirm";
import { FINAL_RUN_STATES, runPercent, runProgressText } from "./runs";

type ChannelRun = ApiChannelRun;
type RunPage = { count: number; results: ChannelRun[] };

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
  const [confirming, setConfirming] = useState(false);
  const refresh = () => void client.invalidateQueries({ queryKey: ["replays", name] });
  const startRun = useMutation({
    mutationFn: () =>
      api<ChannelRun>(base, {
        method: "POST",
        body: JSON.stringify({
          window: { start: new Date(start).toISOString(), end: new Date(end).toISOString() },
          // Sent only from the confirmation, which named the live targets first.
          confirm: true,
        }),
      }),
    onSuccess: () => setErrors({}),
    onSettled: () => {
      setConfirming(false);
      refresh();
    },
    onError: (error) => {
      if (error instanceof ApiError) {
        const fields = Object.entries(error.fieldErrors()).map(([field, messages]) => [field, messages.join(" ")]);
        setErrors(fields.length > 0 ? Object.fromEntries(fields) : { "": error.message });
      } else setErrors({ "": String(error) });
    },
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
        Read a window of the source again through the current spec, beside the live channel, into the same targets:
        their consumers get those events a second time. Each replayed event is marked <code>sluicereplay</code> (the run
        id) and <code>sluicerun</code> (<code>replay</code>): as CloudEvents extension attributes, or as headers where a
        sink writes the data alone. Before it starts, you see which targets it writes into and how each marks the
        events.
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
          disabled={disabled || confirming}
          title={operate.allowed ? undefined : operate.reason}
          onClick={() => setConfirming(true)}
        >
          Replay…
        </button>
      </div>
      {confirming && (
        <RunConfirm
          name={name}
          verb="replay"
          what={`Replay of ${fmtTime(new Date(start).toISOString())} – ${fmtTime(new Date(end).toISOString())}`}
          pending={startRun.isPending}
          onConfirm={() => startRun.mutate()}
          onCancel={() => setConfirming(false)}
        />
      )}
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
                {run.window ? `${fmtTime(run.window.start)} – ${fmtTime(run.window.end)}` : run.topic || "by offsets"}
              </td>
              <td>
                <progress max={100} value={runPercent(run)} aria-label={`Progress of run ${run.id}`} />{" "}
                <span className="small" data-testid="run-progress">
                  {runProgressText(run, run.kind)}
                </span>
              </td>
              <td>
                {!FINAL_RUN_STATES.has(run.state) && (
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
              <td colSpan={5} className="muted small">
                No replays yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </section>
  );
}
