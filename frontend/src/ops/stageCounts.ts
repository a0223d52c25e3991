import type { StageCounts } from "../api/types";

/** The canvas node id of a stage, as `specToGraph` numbers them: n1 the source, then the
 * transforms in order, then the sink. */
export function stageNodeId(counts: StageCounts, transformCount: number): string | null {
  if (counts.stage === "source") return "n1";
  if (counts.stage === "sink") return `n${transformCount + 2}`;
  if (counts.index === null || counts.index < 0 || counts.index >= transformCount) return null;
  return `n${counts.index + 2}`;
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
export function stageDetails(stages: StageCounts[] | undefined, transformCount: number): Map<string, string> {
  const details = new Map<string, string>();
  for (const counts of stages ?? []) {
    const id = stageNodeId(counts, transformCount);
    if (id !== null) details.set(id, stageLine(counts));
  }
  return details;
}
