import { useState } from "react";

import { testPattern, useTestRules } from "../api/hooks";
import type { Rule, RuleTestAnswer } from "../api/types";
import { branchFilters, rulesToTest, ruleTestRows, ruleTestSummary, type RuleTestRow } from "../graph/rules";
import { graphToSpec, isPlainObject } from "../graph/spec";
import { failureMessages, FIRST_SAMPLE, parseSample, SampleEventFields } from "./SampleEvent";
import { useBuilder } from "./store";

interface Outcome {
  rows: RuleTestRow[];
  errors: string[];
}

/**
 * Which rules of the bus a sample event reaches the sinks of: the rules' patterns and switches
 * (POST /api/v1/event-patterns/test-rules, all rules at once as the canvas has them), then, for
 * each rule that matched, the filters that lead its own transforms (POST event-patterns/test,
 * the same event). A rule whose branch holds a transform only Spark runs is "not decided
 * here". The decided branches are marked on the canvas.
 */
export function RulesBench() {
  const [text, setText] = useState(FIRST_SAMPLE);
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const test = useTestRules();
  // The branch filters are tested after the rules test answers: busy until they are too.
  const [checkingFilters, setCheckingFilters] = useState(false);
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
        onSuccess: async (answer) => {
          let filterResults: Record<string, boolean[]>;
          setCheckingFilters(true);
          try {
            filterResults = await testBranchFilters(rules, answer, sample.event);
          } catch (error) {
            setOutcome({ rows: [], errors: [(error as Error).message] });
            setRuleMatches(null);
            return;
          } finally {
            setCheckingFilters(false);
          }
          const rows = ruleTestRows(rules, answer, result.stages, filterResults);
          setOutcome({ rows, errors: [] });
          // An undecided branch gets no mark: the canvas shows only what is known.
          const decided = rows.filter((r) => r.nodeId && r.verdict !== "undecided");
          setRuleMatches(Object.fromEntries(decided.map((r) => [r.nodeId!, r.matched])));
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

  return (
    <section className="bench" aria-label="Rules test bench">
      <h3>Which rules match?</h3>
      <p className="small muted">
        Every enabled rule an event matches gets it, then the filters of the rule's own branch are
        tried on it too; a branch with another transform first (it runs only in Spark) is not
        decided here. The canvas marks the decided ones.
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
        <button type="button" onClick={run} disabled={test.isPending || checkingFilters}>
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
  match: { text: "Match", className: "state-running" },
  "no-match": { text: "No match", className: "state-stopped" },
  disabled: { text: "Disabled", className: "state-stopped" },
  dropped: { text: "Dropped", className: "state-stopped" },
  undecided: { text: "Not decided here", className: "state-paused" },
};

function VerdictBadge({ row }: { row: RuleTestRow }) {
  const { text, className } = VERDICTS[row.verdict];
  return <span className={`badge ${className}`}>{text}</span>;
}

/** Each matched rule's leading filters tested on the event, in order, stopping at the first that
 * drops it: rule name → the answers. The rules test does not read a rule's transforms. */
async function testBranchFilters(rules: Rule[], answer: RuleTestAnswer, event: unknown): Promise<Record<string, boolean[]>> {
  const matched = new Set(answer.results.filter((r) => r.matched).map((r) => r.rule));
  const tested = await Promise.all(
    rules
      .filter((rule) => matched.has(rule.name))
      .map(async (rule) => {
        const kept: boolean[] = [];
        for (const [index, pattern] of branchFilters(rule).patterns.entries()) {
          const result = await testPattern(pattern, event).then(
            (answer) => answer.result,
            (error: unknown) => {
              throw new Error(`rule ${rule.name}, its filter (transform ${index + 1}): ${failureMessages(error).join(" ")}`);
            },
          );
          kept.push(result);
          if (!result) break;
        }
        return [rule.name, kept] as const;
      }),
  );
  return Object.fromEntries(tested);
}
