import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";

import { api, ApiError } from "../api/client";
import type { Channel } from "../api/types";
import { useCan } from "../ui/permissions";
import { checkRows, describeChange, keyError, type LabelRow, rowsOf, serverErrorsByRow, valueError } from "./labels";
import "./fleet.css";
import "./labels.css";

/**
 * The channel's labels (key=value, to find and act on channels as a fleet), read by everyone
 * and edited by editors: PATCH /channels/{name}/ with the labels, replaced whole. Labels are
 * not part of the spec, so saving them makes no revision and leaves the running connector
 * alone; the panel says so, and what the save will change, before it is pressed.
 */
export function LabelsPanel({ channel }: { channel: Channel }) {
  const edit = useCan("edit");
  const client = useQueryClient();
  const saved = channel.labels ?? {};
  const [rows, setRows] = useState<LabelRow[] | null>(null);
  const [serverErrors, setServerErrors] = useState<Record<string, string[]>>({});
  const [message, setMessage] = useState("");
  const save = useMutation({
    mutationFn: (labels: Record<string, string>) =>
      api<Channel>(`channels/${encodeURIComponent(channel.name)}/`, {
        method: "PATCH",
        body: JSON.stringify({ labels }),
      }),
    onSuccess: (answer) => {
      client.setQueryData(["channel", answer.name], answer);
      void client.invalidateQueries({ queryKey: ["channels"] });
    },
  });

  const editing = rows !== null;
  const checked = checkRows(rows ?? []);
  const change = editing ? describeChange(saved, checked.labels) : "";
  const errors = Object.keys(serverErrors).length > 0 ? serverErrors : checked.errors;
  const invalid = Object.keys(checked.errors).length > 0;

  const setRow = (index: number, patch: Partial<LabelRow>) => {
    setServerErrors({});
    setRows((rows ?? []).map((row, i) => (i === index ? { ...row, ...patch } : row)));
  };
  const onSave = () => {
    setMessage("");
    save.mutate(checked.labels, {
      onSuccess: () => {
        setRows(null);
        setServerErrors({});
        setMessage("Labels saved. No new revision; the running connector is not touched.");
      },
      onError: (error) =>
        setServerErrors(
          error instanceof ApiError && Object.keys(error.fieldErrors()).length > 0
            ? serverErrorsByRow(rows ?? [], error.fieldErrors())
            : { "": [(error as Error).message] },
        ),
    });
  };

  return (
    <section className="panel labels-panel" aria-labelledby="labels-title" data-testid="labels-panel">
      <div className="row page-head">
        <h2 id="labels-title">Labels</h2>
        {!editing && (
          <button
            type="button"
            disabled={!edit.allowed}
            title={edit.reason || undefined}
            onClick={() => {
              setMessage("");
              setRows([...rowsOf(saved), { key: "", value: "" }]);
            }}
          >
            Edit labels
          </button>
        )}
      </div>
      {!editing && (
        <p className="small">
          {Object.keys(saved).length === 0 ? (
            <span className="muted">
              No labels. Labels such as team=payments find and select channels in the channel list.
            </span>
          ) : (
            <span className="labels" data-testid="labels-saved">
              {rowsOf(saved).map(({ key, value }) => (
                <span key={key} className="label-chip">
                  {value === "" ? key : `${key}=${value}`}
                </span>
              ))}
            </span>
          )}
        </p>
      )}
      {editing && (
        <form
          className="labels-form"
          onSubmit={(e) => {
            e.preventDefault();
            onSave();
          }}
        >
          <p className="small muted">
            Keys are a name, or a DNS prefix, a / and a name (app.kubernetes.io/part-of); names and values are at most
            63 letters, digits, -, _ or ., beginning and ending with a letter or digit. A value may be empty.
          </p>
          {rows.map((row, i) => {
            const problem = errors[String(i)];
            const key = row.key.trim();
            const value = row.value.trim();
            // Mark the input at fault; a problem of the pair (a repeated key, the server's) marks the key.
            const valueBad = Boolean(problem) && valueError(value) !== null;
            const keyBad = Boolean(problem) && (!valueBad || key === "" || keyError(key) !== null);
            return (
              <div key={i} className="label-row">
                <div className="row">
                  <input
                    aria-label={`Label ${i + 1} key`}
                    placeholder="key"
                    value={row.key}
                    spellCheck={false}
                    aria-invalid={keyBad}
                    aria-describedby={problem ? `label-${i}-error` : undefined}
                    onChange={(e) => setRow(i, { key: e.target.value })}
                  />
                  <span aria-hidden="true">=</span>
                  <input
                    aria-label={`Label ${i + 1} value`}
                    placeholder="value (may be empty)"
                    value={row.value}
                    spellCheck={false}
                    aria-invalid={valueBad}
                    aria-describedby={problem ? `label-${i}-error` : undefined}
                    onChange={(e) => setRow(i, { value: e.target.value })}
                  />
                  <button
                    type="button"
                    className="link"
                    aria-label={`Remove label ${row.key || i + 1}`}
                    onClick={() => {
                      setServerErrors({});
                      setRows(rows.filter((_, j) => j !== i));
                    }}
                  >
                    Remove
                  </button>
                </div>
                {problem && (
                  <span id={`label-${i}-error`} className="error small">
                    {problem.join(" ")}
                  </span>
                )}
              </div>
            );
          })}
          {errors[""] && <p className="error small">{errors[""].join(" ")}</p>}
          <div className="row">
            <button type="button" onClick={() => setRows([...rows, { key: "", value: "" }])}>
              Add a label
            </button>
          </div>
          <p className="small" data-testid="labels-change">
            {change || "No change yet."} Labels are not part of the spec: saving makes no new revision and does not
            touch the running connector.
          </p>
          <div className="row">
            <button type="submit" className="primary" disabled={save.isPending || invalid || change === ""}>
              Save labels
            </button>
            <button
              type="button"
              onClick={() => {
                setRows(null);
                setServerErrors({});
              }}
            >
              Cancel
            </button>
          </div>
        </form>
      )}
      {message && (
        <p className="small" role="status">
          {message}
        </p>
      )}
    </section>
  );
}
