import type { ChannelSpec, RuleCounts, StageCounts } from "../api/types";
import type { StagePaths } from "../graph/spec";

/** The canvas node of a stage, by the stage paths specToGraph gave its nodes ("source",
 * "transforms[0]", "sink"); null for a stage the spec does not have. */
export function stageNodeId(counts: StageCounts, stages: StagePaths): string | null {
  if (counts.stage === "source") return stages.source ?? null;
  if (counts.stage === "sink") return stages.sink ?? null;
  if (counts.index === null || counts.index < 0) return null;
  return stages[`transforms[${counts.index}]`] ?? null;
}

const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });

/** One line for a stage node: what came in, what went on, what failed (only when any did),
 * and how many it dropped (a filter). */
export function stageLine(counts: StageCounts): string {
  const parts = [`${compact.format(counts.in)} in`, `${compact.format(counts.out)} out`];
  if (counts.failed > 0) parts.push(`${compact.format(counts.failed)} failed`);
  const dropped = counts.in - counts.out - counts.failed;
  if (counts.stage === "transform" && dropped > 0) parts.push(`${compact.format(dropped)} dropped`);
  return parts.join(" · ");
}

/** node id → line, for the stages a status reports (unknown stages are left out). */
export function stageDetails(stages: StageCounts[] | undefined, paths: StagePaths): Map<string, string> {
  const details = new Map<string, string>();
  for (const counts of stages ?? []) {
    const id = stageNodeId(counts, paths);
    if (id !== null) details.set(id, stageLine(counts));
  }
  return details;
}

/** One line for a rule node: matched, delivered, failed (when any did) and the match rate. */
export function ruleLine(counts: RuleCounts): string {
  const parts = [`${compact.format(counts.matched)} matched`, `${compact.format(counts.delivered)} delivered`];
  if (counts.failed > 0) parts.push(`${compact.format(counts.failed)} failed`);
  if (typeof counts.matched_per_second === "number") parts.push(`${counts.matched_per_second.toFixed(1)}/s`);
  return parts.join(" · ");
}

/**
 * node id → line for a bus's rules (their rule nodes, matched by name) and their targets (the
 * sink nodes, by the path each target names: "rules[0].sinks[1]").
 */
export function ruleDetails(
  rules: RuleCounts[] | undefined,
  spec: ChannelSpec,
  paths: StagePaths,
): Map<string, string> {
  const details = new Map<string, string>();
  const index = new Map((spec.rules ?? []).map((rule, i) => [rule.name, i]));
  for (const counts of rules ?? []) {
    const i = index.get(counts.rule);
    const ruleNode = i === undefined ? undefined : paths[`rules[${i}]`];
    if (ruleNode) details.set(ruleNode, ruleLine(counts));
    for (const target of counts.targets ?? []) {
      const sinkNode = paths[target.sink];
      if (!sinkNode) continue;
      const parts = [`${compact.format(target.delivered)} delivered`];
      if (target.failed > 0) parts.push(`${compact.format(target.failed)} failed`);
      details.set(sinkNode, parts.join(" · "));
    }
  }
  return details;
}
