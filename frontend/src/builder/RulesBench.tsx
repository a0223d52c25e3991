import { useState } from "react";

import { useTestRules } from "../api/hooks";
import { nameRuleErrors, rulesToTest, ruleTestRows, ruleTestSummary, type RuleTestRow } from "../graph/rules";
import { graphToSpec, isPlainObject } from "../graph/spec";
import { failureMessages, FIRST_SAMPLE, parseSample, SampleEventFields } from "./SampleEvent";
import { useBuilder } from "./store";

interface Outcome {
  rows: RuleTestRow[];
  errors: string[];
}

/**
 * Which rules of the bus a sample event reaches the sinks of, as the server decides it (POST
 * /api/v1/event-patterns/test-rules with the rules as the canvas has them, their own
 * transforms included): each rule's switch and pattern, then its filters in order. A rule whose
 * event would pass through another transform (it runs only in Spark) is "not decided here",
 * with the transform named. The decided branches are marked on the canvas.
 */
export function RulesBench() {
  const [text, setText] = useState(FIRST_SAMPLE);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const test = useTestRules();
  const setRuleMatches = useBuilder((s) => s.setRuleMatches);

  const run = () => {
    const sample = parseSample(text);
    const { nodes, edges } = useBuilder.getState();
    const result = graphToSpec(nodes, edges);
    if (!sample.ok || !result.ok || !result.spec.rules) {
      const why = !sample.ok
        ? sample.message
        : !result.ok
          ? `Finish the canvas first: ${result.problems.map((p) => p.message).join(" ")}`
          : "The channel has no rules yet: draw a second sink from the source or the end of the shared chain.";
      setOutcome({ rows: [], errors: [why] });
      return;
    }
    if (!isPlainObject(sample.event)) {
      setOutcome({ rows: [], errors: ["The sample event is a JSON object (its CloudEvents form)."] });
      return;
    }
    const rules = result.spec.rules;
    test.mutate(
      { rules: rulesToTest(rules), event: sample.event },
      {
        onSuccess: (answer) => {
          const rows = ruleTestRows(rules, answer, result.stages);
          setOutcome({ rows, errors: [] });
          // An undecided branch gets no mark: the canvas shows only what is known.
          const decided = rows.filter((r) => r.nodeId && r.matched !== null);
          setRuleMatches(Object.fromEntries(decided.map((r) => [r.nodeId!, r.matched === true])));
        },
        onError: (error) => {
          const named = nameRuleErrors(failureMessages(error), rules);
          setOutcome({ rows: [], errors: named });
          setRuleMatches(null);
        },
      },
    );
  };

  return (
    <section className="bench" aria-label="Rules test bench">
      <h3>Which rules match?</h3>
      <p className="small muted">
        Every enabled rule whose pattern the event matches gets it, then the filters of the rule's own branch are tried
        on it in order. A branch whose event would pass through another transform (it runs only in Spark) is not decided
        here. The canvas marks the decided ones.
      </p>
      <SampleEventFields
        text={text}
        onText={(next) => {
          setText(next);
          setOutcome(null);
          setRuleMatches(null);
        }}
      />
      <div className="row">
        <button type="button" onClick={run} disabled={test.isPending}>
          Test the rules
        </button>
        <span className="bench-result" role="status" aria-live="polite" data-testid="rules-result">
          {outcome && outcome.rows.length > 0 && ruleTestSummary(outcome.rows)}
        </span>
      </div>
      {outcome && outcome.rows.length > 0 && (
        <table className="table compact" aria-label="Rules the sample matches">
          <thead>
            <tr>
              <th>Rule</th>
              <th>Sample</th>
            </tr>
          </thead>
          <tbody>
            {outcome.rows.map((row) => (
              <tr key={row.rule} data-testid={`rule-result-${row.rule}`}>
                <td>{row.rule}</td>
                <td>
                  <VerdictBadge row={row} />
                  {row.reason && <div className="small muted">{row.reason}</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {outcome && outcome.errors.length > 0 && (
        <ul className="error small">
          {outcome.errors.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

const VERDICTS: Record<RuleTestRow["verdict"], { text: string; className: string }> = {
  matched: { text: "Match", className: "state-running" },
  no_match: { text: "No match", className: "state-stopped" },
  disabled: { text: "Disabled", className: "state-stopped" },
  dropped: { text: "Dropped", className: "state-stopped" },
  undecided: { text: "Not decided here", className: "state-paused" },
};

function VerdictBadge({ row }: { row: RuleTestRow }) {
  const { text, className } = VERDICTS[row.verdict];
  return <span className={`badge ${className}`}>{text}</span>;
}
