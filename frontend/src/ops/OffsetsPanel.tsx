import { useState } from "react";

import { ApiError } from "../api/client";
import { useChangeOffsets, useOffsets } from "../api/hooks";
import type { ChannelStatus } from "../api/types";
import { fmtNumber } from "../ui/format";
import { offsetsBlockedReason } from "./channelView";
import { useCan } from "../ui/permissions";
import { MirrorMaker2Wizard } from "./MirrorMaker2Wizard";
import { buildOffsetsBody, errorsByPartition, partitionKey, type OffsetDrafts } from "./offsets";

/** Per-partition offsets; explicit offsets or a reset while the channel is stopped. */
export function OffsetsPanel({ name, status }: { name: string; status: ChannelStatus | undefined }) {
  const offsets = useOffsets(name);
  const change = useChangeOffsets(name);
  const operate = useCan("operate");
  const [drafts, setDrafts] = useState<OffsetDrafts>({});
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState("");
  const rows = offsets.data?.offsets ?? [];
  const disabledReason = operate.allowed ? offsetsBlockedReason(status) : operate.reason;
  const enabled = disabledReason === "" && !change.isPending;

  const onFailure = (error: unknown, body?: Parameters<typeof errorsByPartition>[0]) => {
    setMessage("");
    if (error instanceof ApiError) {
      const fields = error.fieldErrors();
      setErrors(body && Object.keys(fields).length > 0 ? errorsByPartition(body, fields) : { "": error.message });
    } else setErrors({ "": String(error) });
  };

  const onApply = () => {
    // A new attempt replaces what the last one said: no old success beside a new error.
    setMessage("");
    const built = buildOffsetsBody(rows, drafts);
    if (!built.ok) {
      setErrors(built.errors);
      return;
    }
    setErrors({});
    change.mutate(
      { body: built.body },
      {
        onSuccess: (answer) => {
          setDrafts({});
          setMessage(answer.message);
        },
        onError: (error) => onFailure(error, built.body),
      },
    );
  };

  const onReset = () => {
    if (!window.confirm(`Reset the offsets of ${name}? Its next start begins from the source's starting offsets.`))
      return;
    setErrors({});
    setMessage("");
    change.mutate(
      { reset: true },
      { onSuccess: (answer) => setMessage(answer.message), onError: (error) => onFailure(error) },
    );
  };

  return (
    <section className="panel" aria-labelledby="offsets-title" data-testid="offsets">
      <h2 id="offsets-title">Offsets</h2>
      <p className="small muted">The next offset the channel reads from each source partition, from its checkpoint.</p>
      {offsets.error && (
        <p className="error small" role="alert">
          Could not read the offsets: {offsets.error.message}
        </p>
      )}
      {offsets.data?.note && (
        <p className="small note" data-testid="offsets-note">
          {offsets.data.note}
        </p>
      )}
      <table className="table">
        <thead>
          <tr>
            <th>Topic</th>
            <th className="num">Partition</th>
            <th className="num">Next offset</th>
            <th>New offset</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const key = partitionKey(row);
            const errorId = `offset-error-${key.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
            return (
              <tr key={key}>
                <td className="ellipsis">{row.partition.topic}</td>
                <td className="num">{row.partition.partition}</td>
                <td className="num">{fmtNumber(row.offset.offset)}</td>
                <td>
                  <input
                    inputMode="numeric"
                    aria-label={`New offset for ${row.partition.topic} partition ${row.partition.partition}`}
                    aria-invalid={Boolean(errors[key])}
                    aria-describedby={errors[key] ? errorId : undefined}
                    value={drafts[key] ?? ""}
                    placeholder="unchanged"
                    disabled={!enabled}
                    title={disabledReason || undefined}
                    onChange={(e) => setDrafts({ ...drafts, [key]: e.target.value })}
                  />
                  {errors[key] && (
                    <div id={errorId} className="error small">
                      {errors[key]}
                    </div>
                  )}
                </td>
              </tr>
            );
          })}
          {!offsets.isPending && rows.length === 0 && (
            <tr>
              <td colSpan={4} className="muted">
                No partition offsets.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="row offsets-actions">
        <button
          type="button"
          onClick={onApply}
          disabled={!enabled || rows.length === 0}
          title={disabledReason || undefined}
        >
          Set offsets
        </button>
        <button
          type="button"
          className="danger"
          onClick={onReset}
          disabled={!enabled}
          title={disabledReason || undefined}
        >
          Reset offsets
        </button>
      </div>
      <div className="small offsets-status" role="status" aria-live="polite">
        {disabledReason && <span className="muted">{disabledReason}</span>}
        {message && <span data-testid="offsets-message">{message}</span>}
        {errors[""] && <span className="error">{errors[""]}</span>}
      </div>
      <MirrorMaker2Wizard name={name} enabled={enabled} disabledReason={disabledReason} />
    </section>
  );
}
