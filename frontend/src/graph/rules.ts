/**
 * A rule of a bus on the canvas: a node of kind "rule" whose `config` holds the rule's own
 * fields. The stages after it (its transforms, then its sinks) are the rule's.
 */

import type { JsonSchema, Rule, RuleTestAnswer, RuleTestRequest, Stage } from "../api/types";
import { isPlainObject } from "./util";

/** The server's RULE_NAME_PATTERN (pipelines/spec/channel.py). */
export const RULE_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** The rule's form, generated like a stage's config form (the pattern as a JSON field). */
export const RULE_SCHEMA: JsonSchema = {
  type: "object",
  required: ["name"],
  properties: {
    name: {
      type: "string",
      title: "Rule name",
      description: "Unique in the bus: lowercase letters, digits and dashes (1-63).",
    },
    enabled: {
      type: "boolean",
      title: "Enabled",
      default: true,
      description: "A disabled rule matches nothing and its sinks receive nothing.",
    },
    pattern: {
      title: "Event pattern",
      description: "An EventBridge event pattern over the event after the shared transforms; empty: every event.",
      examples: [{ data: { amount: [{ numeric: [">", 100] }] } }],
    },
    description: { type: "string", title: "Description" },
  },
};

/** The rule's fields as the canvas keeps them (a rule node's config). */
export function ruleConfig(rule: Pick<Rule, "name" | "description" | "enabled" | "pattern">): Record<string, unknown> {
  const config: Record<string, unknown> = { name: rule.name, enabled: rule.enabled !== false };
  if (rule.pattern !== undefined && rule.pattern !== null) config.pattern = rule.pattern;
  if (rule.description) config.description = rule.description;
  return config;
}

/** The rule a rule node (or, with config null, a branch without one) and its stages make. */
export function toRule(
  config: Record<string, unknown> | null,
  name: string,
  transforms: Stage[],
  sinks: Stage[],
): Rule {
  return {
    name,
    description: typeof config?.description === "string" ? config.description : "",
    enabled: config?.enabled !== false,
    // Anything typed goes to the server, which names what is wrong with it at rules[i].pattern.
    pattern: config?.pattern === undefined ? null : (config.pattern as Rule["pattern"]),
    transforms,
    sinks,
  };
}

/** The name a rule node gives (its config's), "" when it has none. */
export function ruleName(config: Record<string, unknown>): string {
  return typeof config.name === "string" ? config.name : "";
}

/** The name the server gives a linear channel's one implicit rule (ChannelSpec.branches()). */
export const DEFAULT_RULE = "default";

/**
 * A free name for a new rule: ``default`` for the branch a linear channel had before it forked
 * (``wasLinear``; the server then keeps its sink's secrets in that rule's first sink), else the
 * first of rule-1, rule-2, … that is not taken.
 */
export function newRuleName(taken: Iterable<string>, wasLinear = false): string {
  const used = new Set(taken);
  if (wasLinear && !used.has(DEFAULT_RULE)) return DEFAULT_RULE;
  for (let n = 1; ; n++) if (!used.has(`rule-${n}`)) return `rule-${n}`;
}

/** What is wrong with a rule's name on this canvas (the server says the same on save). */
export function ruleNameProblems(name: string, others: string[]): string[] {
  if (name === "") return ["A rule needs a name."];
  const problems: string[] = [];
  if (!RULE_NAME.test(name))
    problems.push("Use 1-63 lowercase letters, digits and dashes, starting and ending with a letter or a digit.");
  if (others.includes(name)) problems.push(`Another rule is named ${name}: rule names are unique in a bus.`);
  return problems;
}

/** A short line for a rule node: what it matches. */
export function patternSummary(pattern: unknown): string {
  if (pattern === undefined || pattern === null) return "every event";
  if (!isPlainObject(pattern)) return "pattern (not an object)";
  const fields = leafPaths(pattern);
  if (fields.length === 0) return "pattern (empty)";
  const shown = fields.slice(0, 2).join(", ");
  return `matches ${shown}${fields.length > 2 ? ` +${fields.length - 2}` : ""}`;
}

function leafPaths(pattern: Record<string, unknown>, prefix = ""): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(pattern)) {
    if (key.startsWith("$")) out.push(`${prefix}${key}`);
    else if (isPlainObject(value)) out.push(...leafPaths(value, `${prefix}${key}.`));
    else out.push(`${prefix}${key}`);
  }
  return out;
}

/**
 * The rules as the rules test (POST event-patterns/test-rules) takes them: name, pattern,
 * switch and the rule's own transforms. The server decides each rule: its pattern, then its
 * filters in order; past any other transform (it runs only in Spark) it answers "undecided"
 * rather than guess.
 */
export function rulesToTest(rules: Rule[]): RuleTestRequest["rules"] {
  return rules.map((r) => ({
    name: r.name,
    pattern: r.pattern ?? null,
    enabled: r.enabled !== false,
    transforms: (r.transforms ?? []).map((t) => ({ type: t.type, config: t.config ?? {} })),
  }));
}

/** The server's answer for one rule: whether the sample reaches its sinks, and why not. */
export type RuleVerdict = RuleTestAnswer["results"][number]["verdict"];

export interface RuleTestRow {
  rule: string;
  /** The canvas node heading the rule's branch (its rule node). */
  nodeId: string | undefined;
  /** true: the sample reaches the rule's sinks; false: it does not; null: not decided. */
  matched: boolean | null;
  verdict: RuleVerdict;
  /** Why, in the server's words ("" for a plain match). */
  reason: string;
}

/**
 * The test's answer, rule by rule in the spec's order, each with the node heading its branch
 * (``stages["rules[i]"]``, graphToSpec's). A rule the answer leaves out is not decided: the
 * bench never says more than the server did.
 */
export function ruleTestRows(rules: Rule[], answer: RuleTestAnswer, stages: Record<string, string>): RuleTestRow[] {
  const byName = new Map(answer.results.map((r) => [r.rule, r]));
  return rules.map((r, i) => {
    const found = byName.get(r.name);
    const nodeId = stages[`rules[${i}]`];
    if (!found)
      return {
        rule: r.name,
        nodeId,
        matched: null,
        verdict: "undecided",
        reason: "The test gave no answer for this rule.",
      };
    return {
      rule: r.name,
      nodeId,
      matched: found.matched,
      verdict: found.verdict,
      reason: found.reason,
    };
  });
}

/** The bench's one line: "1 of 2 rules match", and how many it cannot decide. */
export function ruleTestSummary(rows: RuleTestRow[]): string {
  const matched = rows.filter((r) => r.verdict === "matched").length;
  const undecided = rows.filter((r) => r.verdict === "undecided").length;
  const line = `${matched} of ${rows.length} rules match`;
  return undecided > 0 ? `${line}; ${undecided} not decided here` : line;
}

/**
 * The rules test's 400 messages ("rules[1].pattern: …", "rules[0].transforms[2].config.pattern:
 * …") with each rule named and its transform numbered as the canvas shows them ("rule eu,
 * transform 3: …", "rule us, pattern: …").
 */
export function nameRuleErrors(messages: string[], rules: Pick<Rule, "name">[]): string[] {
  const name = (i: string, whole: string) => {
    const rule = rules[Number(i)];
    return rule ? `rule ${rule.name}` : whole;
  };
  return messages.map((m) =>
    m
      .replace(/^rules\[(\d+)\]\.transforms\[(\d+)\](?:\.config\.pattern)?/, (whole, i: string, t: string) =>
        rules[Number(i)] ? `${name(i, whole)}, transform ${Number(t) + 1}` : whole,
      )
      .replace(/^rules\[(\d+)\]/, (whole, i: string) => name(i, whole))
      // "rule us.pattern" → "rule us, pattern" (rule names hold no dots).
      .replace(/^(rule [^.:]+(?:, transform \d+)?)\./, "$1, "),
  );
}
