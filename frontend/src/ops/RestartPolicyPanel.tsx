import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";

import { api, ApiError } from "../api/client";
import type { Channel } from "../api/types";
import { useCan } from "../ui/permissions";
import {
  buildPolicy,
  describePolicy,
  draftOf,
  type PolicyDraft,
  policyErrors,
  type RestartPolicy,
} from "./restartPolicy";

/** The channel's restart policy, read by everyone and changed by editors (PATCH
 * /channels/{name}/ with restart_policy; the server checks the role and the limits). */
export function RestartPolicyPanel({ channel }: { channel: Channel }) {
  const edit = useCan("edit");
  const client = useQueryClient();
  const [draft, setDraft] = useState<PolicyDraft | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState("");
  const save = useMutation({
    mutationFn: (policy: RestartPolicy) =>
      api<Channel>(`channels/${encodeURIComponent(channel.name)}/`, {
        method: "PATCH",
        body: JSON.stringify({ restart_policy: policy }),
      }),
    onSuccess: (saved) => client.setQueryData(["channel", saved.name], saved),
  });
  const shown = draft ?? draftOf(channel.restart_policy);
  const editing = draft !== null;
  const set = (patch: Partial<PolicyDraft>) => setDraft({ ...shown, ...patch });

  const onSave = () => {
    setMessage("");
    const built = buildPolicy(shown);
    if (!built.ok) {
      setErrors(built.errors);
      return;
    }
    setErrors({});
    save.mutate(built.policy, {
      onSuccess: () => {
        setDraft(null);
        setMessage("Restart policy saved.");
      },
      onError: (error) =>
        setErrors(
          error instanceof ApiError && Object.keys(error.fieldErrors()).length > 0
            ? policyErrors(error.fieldErrors())
            : { "": (error as Error).message },
        ),
    });
  };

  const field = (key: keyof PolicyDraft, label: string, unit: string) => (
    <label className="field">
      <span>{label}</span>
      <span className="row">
        <input
          inputMode="decimal"
          value={shown[key]}
          disabled={!edit.allowed || shown.type === "never"}
          title={edit.reason || undefined}
          aria-invalid={Boolean(errors[key])}
          aria-describedby={errors[key] ? `policy-${key}-error` : undefined}
          onChange={(e) => set({ [key]: e.target.value })}
          data-testid={`policy-${key}`}
        />
        <span className="muted small">{unit}</span>
      </span>
      {errors[key] && (
        <span id={`policy-${key}-error`} className="error small">
          {errors[key]}
        </span>
      )}
    </label>
  );

  return (
    <section className="panel restart-policy" aria-labelledby="restart-policy-title" data-testid="restart-policy">
      <h2 id="restart-policy-title">Restart policy</h2>
      <p className="small muted">{describePolicy(channel.restart_policy)}</p>
      <label className="field">
        <span>When the channel fails</span>
        <select
          value={shown.type}
          disabled={!edit.allowed}
          title={edit.reason || undefined}
          onChange={(e) => set({ type: e.target.value })}
          data-testid="policy-type"
        >
          <option value="on-failure">on-failure: restart it, with backoff</option>
          <option value="never">never: leave it FAILED</option>
        </select>
      </label>
      <div className="policy-fields">
        {field("max_attempts", "Attempts in a row", "restarts")}
        {field("backoff_initial_seconds", "First wait", "s")}
        {field("backoff_max_seconds", "Longest wait", "s")}
      </div>
      <div className="row">
        <button
          type="button"
          className="primary"
          onClick={onSave}
          disabled={!edit.allowed || !editing || save.isPending}
          title={edit.reason || undefined}
        >
          {save.isPending ? "Saving…" : "Save policy"}
        </button>
        {editing && (
          <button
            type="button"
            onClick={() => {
              setDraft(null);
              setErrors({});
            }}
          >
            Cancel
          </button>
        )}
      </div>
      <div className="small" role="status" aria-live="polite">
        {message && !editing && <span data-testid="policy-message">{message}</span>}
        {errors[""] && <span className="error">{errors[""]}</span>}
      </div>
    </section>
  );
}
