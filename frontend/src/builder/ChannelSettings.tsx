import { useMe, usePlugins } from "../api/hooks";
import type { ErrorPolicy } from "../api/types";
import { runtimeErrors } from "../graph/runtime";
import { pluginIndex, pluginKey } from "./plugins";
import { RuntimeSettings } from "./RuntimeSettings";
import { ShapeSource } from "./ShapeSource";
import { StageForm } from "./StageForm";
import { useBuilder } from "./store";

const DEFAULT_POLICY: ErrorPolicy = { tolerance: "none", dead_letter: null, log: false };

/**
 * Shown when no stage is selected: the channel's description, its bad-event policy and how
 * the runtime runs it.
 */
export function ChannelSettings({ otherErrors }: { otherErrors: Record<string, string[]> }) {
  const description = useBuilder((s) => s.description);
  const team = useBuilder((s) => s.team);
  const exists = useBuilder((s) => s.exists);
  const setMeta = useBuilder((s) => s.setMeta);
  // A new channel's team, asked only of a user who may create channels in more than one.
  const editable = (useMe().data?.teams ?? []).filter((t) => t.can.edit).map((t) => t.name);
  const policy = useBuilder((s) => s.errors) ?? DEFAULT_POLICY;
  const setPolicy = useBuilder((s) => s.setErrorPolicy);
  const plugins = usePlugins();
  const sinks = (plugins.data ?? []).filter((p) => p.kind === "sink" && p.type !== "preview");
  const deadLetter = policy.dead_letter;
  const deadLetterPlugin = deadLetter ? pluginIndex(plugins.data).get(pluginKey("sink", deadLetter.type)) : undefined;
  const deadLetterErrors: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(otherErrors)) {
    const match = path.match(/^spec\.errors\.dead_letter\.config\.?(.*)$/);
    if (match) deadLetterErrors[match[1] ?? ""] = messages;
  }
  const policyErrors = Object.entries(otherErrors).filter(([path]) => path.startsWith("spec.errors"));

  return (
    <div className="config-panel">
      <h2>Channel</h2>
      <p className="small muted">
        Select a stage to edit its settings. Drag stages from the left, connect each output (right dot) to the next
        stage's input (left dot). Connecting a transform of the same chain reorders it; a second link out of the source
        or a shared transform (to a sink or a new transform) keeps the first and makes the channel a bus: each branch a
        rule with its own pattern.
      </p>
      {exists && team && <p className="small muted">Team: {team}</p>}
      {!exists && editable.length > 1 && (
        <label className="field">
          <span>Team</span>
          <select value={team} onChange={(e) => setMeta({ team: e.target.value })} data-testid="channel-team">
            <option value="">Choose the team…</option>
            {editable.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
          {(otherErrors.team ?? []).map((m) => (
            <span key={m} className="error small">
              {m}
            </span>
          ))}
        </label>
      )}
      <label className="field">
        <span>Description</span>
        <textarea rows={2} value={description} onChange={(e) => setMeta({ description: e.target.value })} />
      </label>

      <fieldset className="errors-policy">
        <legend>Bad events</legend>
        <label className="field">
          <span>Error tolerance</span>
          <select
            value={policy.tolerance}
            onChange={(e) => setPolicy({ ...policy, tolerance: e.target.value as ErrorPolicy["tolerance"] })}
          >
            <option value="none">none: the first bad event fails the channel</option>
            <option value="all">all: count bad events, dead-letter them, keep going</option>
          </select>
        </label>
        <label className="check">
          <input
            type="checkbox"
            checked={policy.log}
            onChange={(e) => setPolicy({ ...policy, log: e.target.checked })}
          />
          Log bad events
        </label>
        <label className="field">
          <span>Dead-letter target</span>
          <select
            value={deadLetter?.type ?? ""}
            onChange={(e) =>
              setPolicy({ ...policy, dead_letter: e.target.value ? { type: e.target.value, config: {} } : null })
            }
          >
            <option value="">none (bad events are only counted)</option>
            {sinks.map((p) => (
              <option key={p.type} value={p.type}>
                {p.title}
              </option>
            ))}
          </select>
        </label>
        {deadLetter && deadLetterPlugin && (
          <StageForm
            key={deadLetter.type}
            idPrefix="dead-letter"
            plugin={deadLetterPlugin}
            config={deadLetter.config}
            errors={deadLetterErrors}
            onChange={(config) => setPolicy({ ...policy, dead_letter: { ...deadLetter, config } })}
          />
        )}
        {policyErrors.length > 0 && (
          <div role="alert">
            <ul className="error small">
              {policyErrors.map(([path, messages]) => (
                <li key={path}>
                  {path}: {messages.join(" ")}
                </li>
              ))}
            </ul>
          </div>
        )}
      </fieldset>

      <RuntimeSettings errors={runtimeErrors(otherErrors)} />
      <ShapeSource />
    </div>
  );
}
