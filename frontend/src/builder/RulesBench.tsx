import { useState } from "react";

import { useTestRules } from "../api/hooks";
import { rulesToTest, ruleTestRows, type RuleTestRow } from "../graph/rules";
import { graphToSpec, isPlainObject } from "../graph/spec";
import { failureMessages, FIRST_SAMPLE, parseSample, SampleEventFields } from "./SampleEvent";
import { useBuilder } from "./store";

interface Outcome {
  rows: RuleTestRow[];
  errors: string[];
}

/**
 * Which rules of the bus a sample event matches (POST /api/v1/event-patterns/test-rules), all
 * rules at once as the canvas has them; the matched branches are marked on the canvas.
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
          : "The channel has no rules yet: draw a second sink from the end of the chain.";
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
          setRuleMatches(Object.fromEntries(rows.flatMap((r) => (r.nodeId ? [[r.nodeId, r.matched]] : []))));
        },
        onError: (error) => {
          // "rules[1].pattern: …" reads better with the rule's name.
          const named = failureMessages(error).map((m) =>
            m.replace(/^rules\[(\d+)\]/, (whole, i: string) => `rule ${rules[Number(i)]?.name ?? whole}`),
          );
          setOutcome({ rows: [], errors: named });
          setRuleMatches(null);
        },
      },
    );
  };

  const matchedCount = outcome?.rows.filter((r) => r.matched).length ?? 0;
  return (
    <section className="bench" aria-label="Rules test bench">
      <h3>Which rules match?</h3>
      <p className="small muted">Every enabled rule an event matches gets it; the canvas marks them.</p>
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
          {outcome && outcome.rows.length > 0 && `${matchedCount} of ${outcome.rows.length} rules match`}
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
                  {row.matched ? (
                    <span className="badge state-running">Match</span>
                  ) : (
                    <span className="badge state-stopped">{row.enabled ? "No match" : "Disabled"}</span>
                  )}
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
