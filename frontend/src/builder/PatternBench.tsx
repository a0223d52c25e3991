import { useState } from "react";

import { testPattern } from "../api/hooks";
import { failureMessages, FIRST_SAMPLE, parseSample, SampleEventFields } from "./SampleEvent";

type Outcome = { kind: "match" | "nomatch" } | { kind: "error"; messages: string[] } | null;

/** Try the filter's pattern on a sample event (POST /api/v1/event-patterns/test). */
export function PatternBench({ pattern }: { pattern: unknown }) {
  const [text, setText] = useState(FIRST_SAMPLE);
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);

  const run = async () => {
    const sample = parseSample(text);
    if (!sample.ok) {
      setOutcome({ kind: "error", messages: [sample.message] });
      return;
    }
    setBusy(true);
    try {
      const answer = await testPattern(pattern ?? {}, sample.event);
      setOutcome({ kind: answer.result ? "match" : "nomatch" });
    } catch (error) {
      setOutcome({ kind: "error", messages: failureMessages(error) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section className="bench" aria-label="Pattern test bench">
      <h3>Test the pattern</h3>
      <SampleEventFields
        text={text}
        onText={(next) => {
          setText(next);
          setOutcome(null);
        }}
      />
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
