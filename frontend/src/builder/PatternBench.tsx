import { useState } from "react";

import { ApiError } from "../api/client";
import { testPattern } from "../api/hooks";

const SAMPLE = {
  specversion: "1.0",
  id: "generator/1",
  source: "sluice://generator",
  type: "sluice.demo.order",
  data: { order_id: 1, region: "eu-west", amount: 120.5, currency: "EUR" },
};

type Outcome = { kind: "match" | "nomatch" } | { kind: "error"; messages: string[] } | null;

/** Try the filter's pattern on a sample event (POST /api/v1/event-patterns/test). */
export function PatternBench({ pattern }: { pattern: unknown }) {
  const [text, setText] = useState(JSON.stringify(SAMPLE, null, 2));
  const [outcome, setOutcome] = useState<Outcome>(null);
  const [busy, setBusy] = useState(false);

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
