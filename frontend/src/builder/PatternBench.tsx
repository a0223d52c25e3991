import { useState } from "react";

import { ApiError } from "../api/client";
import { testPattern, usePreview } from "../api/hooks";
import { BUILT_IN_SAMPLES, tailSamples } from "./samples";
import { useBuilder } from "./store";

type Outcome = { kind: "match" | "nomatch" } | { kind: "error"; messages: string[] } | null;

/** Try the filter's pattern on a sample event (POST /api/v1/event-patterns/test). */
export function PatternBench({ pattern }: { pattern: unknown }) {
  const [text, setText] = useState(JSON.stringify(BUILT_IN_SAMPLES[0]!.event, null, 2));
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);
  const name = useBuilder((s) => s.name);
  const exists = useBuilder((s) => s.exists);
  const tail = usePreview(name, exists && name !== "", false);
  const latest = tailSamples(tail.data ?? []);

  const pick = (value: string) => {
    const [group, index] = value.split(":");
    const sample = (group === "tail" ? latest : BUILT_IN_SAMPLES)[Number(index)];
    if (!sample) return;
    setText(JSON.stringify(sample.event, null, 2));
    setOutcome(null);
  };

  const run = async () => {
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch (error) {
      setOutcome({ kind: "error", messages: [`The sample event is not JSON: ${(error as Error).message}`] });
      return;
    }
    setBusy(true);
    try {
      const answer = await testPattern(pattern ?? {}, event);
      setOutcome({ kind: answer.result ? "match" : "nomatch" });
    } catch (error) {
      const messages =
        error instanceof ApiError
          ? Object.entries(error.fieldErrors()).flatMap(([key, list]) => list.map((m) => `${key}: ${m}`))
          : [String(error)];
      setOutcome({ kind: "error", messages: messages.length ? messages : ["The test failed."] });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="bench" aria-label="Pattern test bench">
      <h3>Test the pattern</h3>
      <label className="field">
        <span>Pick a sample event</span>
        <select value="" onChange={(e) => pick(e.target.value)} onFocus={() => exists && void tail.refetch()}>
          <option value="" disabled>
            Choose one to fill the box below…
          </option>
          <optgroup label="Built-in samples">
            {BUILT_IN_SAMPLES.map((s, i) => (
              <option key={s.label} value={`builtin:${i}`}>
                {s.label}
              </option>
            ))}
          </optgroup>
          {latest.length > 0 && (
            <optgroup label={`Latest events of ${name} (preview tail)`}>
              {latest.map((s, i) => (
                <option key={s.label} value={`tail:${i}`}>
                  {s.label}
                </option>
              ))}
            </optgroup>
          )}
        </select>
      </label>
      <label className="field">
        <span>Sample event (CloudEvents JSON: attributes, payload under data)</span>
        <textarea rows={9} value={text} spellCheck={false} onChange={(e) => setText(e.target.value)} />
      </label>
      <div className="row">
        <button type="button" onClick={() => void run()} disabled={busy}>
          Test pattern
        </button>
        <span className="bench-result" role="status" aria-live="polite" data-testid="pattern-result">
          {outcome?.kind === "match" && <span className="badge state-running">Match</span>}
          {outcome?.kind === "nomatch" && <span className="badge state-stopped">No match</span>}
        </span>
      </div>
      {outcome?.kind === "error" && (
        <ul className="error small">
          {outcome.messages.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
    </section>
  );
}
