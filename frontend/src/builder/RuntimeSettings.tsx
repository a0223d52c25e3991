import { useState } from "react";

import type { ExecutionMode, Isolation } from "../api/types";
import {
  intervalHint,
  ISOLATIONS,
  MAX_INTERVAL_SECONDS,
  MIN_INTERVAL_SECONDS,
  MODES,
  parseInterval,
  runtimeOf,
  withMode,
} from "../graph/runtime";
import { useBuilder } from "./store";

/**
 * How the runtime runs the channel (the spec's `runtime` block): in a shared or a dedicated
 * Spark driver, in which execution mode, at which interval. ``errors`` are the server's, by
 * field ("" for the block); those a mode causes on a stage show on that stage's node.
 */
export function RuntimeSettings({ errors }: { errors: Record<string, string[]> }) {
  const stored = useBuilder((s) => s.runtime);
  const setRuntime = useBuilder((s) => s.setRuntime);
  const options = runtimeOf(stored);
  return (
    <fieldset className="errors-policy runtime-settings">
      <legend>Runtime</legend>
      <label className="field">
        <span>Isolation</span>
        <select
          value={options.isolation}
          aria-invalid={Boolean(errors.isolation)}
          onChange={(e) => setRuntime({ ...options, isolation: e.target.value as Isolation })}
        >
          {ISOLATIONS.map((i) => (
            <option key={i.value} value={i.value}>
              {i.label}
            </option>
          ))}
        </select>
        <FieldErrors messages={errors.isolation} />
      </label>
      <label className="field">
        <span>Execution mode</span>
        <select
          value={options.mode}
          aria-invalid={Boolean(errors.mode)}
          onChange={(e) => setRuntime(withMode(options, e.target.value as ExecutionMode))}
        >
          {MODES.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </select>
        <small className="muted">{modeHint(options.mode)}</small>
        <FieldErrors messages={errors.mode} />
      </label>
      <IntervalField
        value={options.interval_seconds}
        disabled={options.mode === "available-now"}
        hint={intervalHint(options.mode)}
        errors={errors.interval_seconds}
        onChange={(interval_seconds) => setRuntime({ ...options, interval_seconds })}
      />
      <FieldErrors messages={errors[""]} />
    </fieldset>
  );
}

function modeHint(mode: ExecutionMode): string {
  if (mode === "real-time")
    return (
      "Kafka source and sink, stateless transforms, errors.tolerance none. It holds one core per " +
      "source partition while it runs; with none free the channel waits UNASSIGNED, with the reason."
    );
  if (mode === "available-now")
    return "Reads what a kafka, http or files source holds as the run starts, then the channel stops by itself.";
  return "";
}

interface IntervalProps {
  value: number | null;
  disabled: boolean;
  hint: string;
  errors: string[] | undefined;
  onChange: (value: number | null) => void;
}

/** The interval as typed (a number is kept while it is being typed: "0." stays "0."). */
function IntervalField({ value, disabled, hint, errors, onChange }: IntervalProps) {
  const shown = value === null ? "" : String(value);
  const [text, setText] = useState(shown);
  const [seen, setSeen] = useState(value);
  if (seen !== value) {
    // Changed elsewhere (undo, a loaded channel, the mode): show it unless it is what was typed.
    setSeen(value);
    if (parseInterval(text) !== value) setText(shown);
  }
  return (
    <label className="field">
      <span>Interval (seconds)</span>
      <input
        type="number"
        min={MIN_INTERVAL_SECONDS}
        max={MAX_INTERVAL_SECONDS}
        step="any"
        placeholder="none"
        value={disabled ? "" : text}
        disabled={disabled}
        aria-invalid={Boolean(errors)}
        onChange={(e) => {
          setText(e.target.value);
          const parsed = parseInterval(e.target.value);
          if (parsed !== undefined) onChange(parsed);
        }}
      />
      <small className="muted">{hint}</small>
      <FieldErrors messages={errors} />
    </label>
  );
}

function FieldErrors({ messages }: { messages: string[] | undefined }) {
  if (!messages || messages.length === 0) return null;
  return (
    <ul className="error small" role="alert">
      {messages.map((m) => (
        <li key={m}>{m}</li>
      ))}
    </ul>
  );
}
