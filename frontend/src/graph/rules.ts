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
      description:
        "An EventBridge event pattern over the event after the shared transforms; empty: every event.",
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
export function toRule(config: Record<string, unknown> | null, name: string, transforms: Stage[], sinks: Stage[]): Rule {
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
 * The rules as the rules test (POST event-patterns/test-rules) takes them: name, pattern and
 * switch. The server reads nothing else of a rule (its transforms neither), so what the rule's
 * own transforms do to the event is the bench's part: see ``branchFilters``.
 */
export function rulesToTest(rules: Rule[]): RuleTestRequest["rules"] {
  return rules.map((r) => ({ name: r.name, pattern: r.pattern ?? null, enabled: r.enabled !== false }));
}

/** The plugin type of the transform that keeps events matching an event pattern. */
export const FILTER_TYPE = "filter";

/**
 * What the bench can decide of a rule's own transforms: the patterns of the filters that lead
 * them (each sees the event as the rule got it, so each is a pattern test of the same event),
 * and the first transform past them that only Spark runs (null: none). A filter after such a
 * transform sees an event the bench cannot make, so it is not listed.
 */
export function branchFilters(rule: Rule): { patterns: unknown[]; sparkOnly: { index: number; type: string } | null } {
  const patterns: unknown[] = [];
  const transforms = rule.transforms ?? [];
  for (const [index, stage] of transforms.entries()) {
    if (stage.type !== FILTER_TYPE) return { patterns, sparkOnly: { index, type: stage.type } };
    patterns.push(stage.config?.pattern ?? {});
  }
  return { patterns, sparkOnly: null };
}

/** Whether the sample reaches the rule's sinks, as far as the bench can tell. */
export type RuleVerdict = "match" | "no-match" | "disabled" | "dropped" | "undecided";

export interface RuleTestRow {
  rule: string;
  /** The canvas node heading the rule's branch (its rule node). */
  nodeId: string | undefined;
  /** The sample reaches the rule's sinks: its pattern matches and its own filters keep it. */
  matched: boolean;
  enabled: boolean;
  verdict: RuleVerdict;
  /** Why, in words, when the verdict is not a plain match or no match. */
  reason: string;
}

/**
 * The test's answer, rule by rule in the spec's order, each with the node heading its branch
 * (``stages["rules[i]"]``, graphToSpec's). A rule the answer leaves out did not match. A rule
 * whose pattern matched is a match only when its own filters (``filterResults``: rule name →
 * each of its ``branchFilters`` patterns tested on the sample, in order) keep the event and no
 * transform only Spark runs stands after them; otherwise it was dropped (a filter said no) or
 * is not decided here.
 */
export function ruleTestRows(
  rules: Rule[],
  answer: RuleTestAnswer,
  stages: Record<string, string>,
  filterResults: Record<string, boolean[]> = {},
): RuleTestRow[] {
  const matched = new Map(answer.results.map((r) => [r.rule, r.matched]));
  return rules.map((r, i) => {
    const enabled = r.enabled !== false;
    const row = { rule: r.name, nodeId: stages[`rules[${i}]`], enabled };
    if (!enabled) return { ...row, matched: false, verdict: "disabled", reason: "" };
    if (matched.get(r.name) !== true) return { ...row, matched: false, verdict: "no-match", reason: "" };
    const { patterns, sparkOnly } = branchFilters(r);
    const kept = filterResults[r.name] ?? [];
    const dropping = patterns.findIndex((_, f) => kept[f] === false);
    if (dropping >= 0)
      return {
        ...row,
        matched: false,
        verdict: "dropped",
        reason: `its pattern matches; its filter (transform ${dropping + 1}) drops the event`,
      };
    if (patterns.some((_, f) => kept[f] !== true))
      return { ...row, matched: false, verdict: "undecided", reason: "not decided here: its filters were not tested" };
    if (sparkOnly)
      return {
        ...row,
        matched: false,
        verdict: "undecided",
        reason: `not decided here: its transform ${sparkOnly.type} (transform ${sparkOnly.index + 1}) runs only in Spark`,
      };
    return { ...row, matched: true, verdict: "match", reason: "" };
  });
}

/** The bench's one line: "1 of 2 rules match", and how many it cannot decide. */
export function ruleTestSummary(rows: RuleTestRow[]): string {
  const matched = rows.filter((r) => r.verdict === "match").length;
  const undecided = rows.filter((r) => r.verdict === "undecided").length;
  const line = `${matched} of ${rows.length} rules match`;
  return undecided > 0 ? `${line}; ${undecided} not decided here` : line;
}
