/**
 * The shape of a canvas: the source, the shared chain of transforms after it, and the
 * branches that leave the end of that chain (the fork). Each branch is a rule of a bus: an
 * optional rule node (its name, pattern, switch), the rule's own chain of transforms, then its
 * sinks. A canvas with one branch and no rule node is a linear channel.
 *
 *     source → t1 → t2 ─┬→ rule a → t3 → sink x
 *                       │                └→ sink y     (a rule with two sinks)
 *                       └→ rule b → sink z
 */

import type { GraphEdge, GraphNode, GraphProblem, NodeKind } from "./types";
import { groupBy } from "./util";

export interface Branch {
  /** The branch's rule node, or null: a branch that starts with a transform or a sink. */
  rule: string | null;
  /** The branch's first node (the rule node when it has one). */
  head: string;
  transforms: string[];
  sinks: string[];
}

export interface Structure {
  source: string;
  transforms: string[];
  /** The node the branches leave from: the last shared transform, or the source. */
  fork: string;
  branches: Branch[];
}

export type Analysis = { ok: true; structure: Structure } | { ok: false; problems: GraphProblem[] };

const LOOP = "The stages form a loop.";

/** The canvas's structure, or every problem that keeps it from having one. */
export function analyzeGraph(nodes: GraphNode[], edges: GraphEdge[]): Analysis {
  const kinds = new Map(nodes.map((n) => [n.id, n.data.kind]));
  const known = edges.filter((e) => kinds.has(e.source) && kinds.has(e.target));
  const outgoing = groupBy(known, (e) => e.source);
  const incoming = groupBy(known, (e) => e.target);
  const next = (id: string) => (outgoing.get(id) ?? []).map((e) => e.target);
  const kind = (id: string): NodeKind => kinds.get(id)!;

  const problems = countProblems(nodes);
  if (problems.length > 0) return { ok: false, problems };
  for (const node of nodes) {
    if ((incoming.get(node.id)?.length ?? 0) > 1)
      problems.push({ message: "A stage reads from exactly one stage.", nodeIds: [node.id] });
  }
  if (problems.length > 0) return { ok: false, problems };

  const source = nodes.find((n) => n.data.kind === "source")!.id;
  const seen = new Set([source]);
  const visit = (id: string) => {
    if (seen.has(id)) throw new LoopError(id);
    seen.add(id);
  };
  /** Follow single edges into transforms from ``start``; the last node reached is the end. */
  const chain = (start: string, transforms: string[]): string => {
    let current = start;
    for (;;) {
      const after = next(current);
      if (after.length !== 1 || kind(after[0]!) !== "transform") return current;
      visit(after[0]!);
      transforms.push(after[0]!);
      current = after[0]!;
    }
  };

  try {
    const shared: string[] = [];
    const fork = chain(source, shared);
    const heads = next(fork);
    if (heads.length === 0) return fail("Connect the chain from the source through to the sink.", [fork]);
    const branches: Branch[] = [];
    for (const head of heads) {
      visit(head);
      const branch = walkBranch(head, kind, next, chain, visit);
      if ("message" in branch) return { ok: false, problems: [branch] };
      branches.push(branch);
    }
    const loose = nodes.filter((n) => !seen.has(n.id)).map((n) => n.id);
    if (loose.length > 0) return fail("Some stages are not connected to the chain.", loose);
    return { ok: true, structure: { source, transforms: shared, fork, branches } };
  } catch (error) {
    if (error instanceof LoopError) return fail(LOOP, [error.nodeId]);
    throw error;
  }
}

function walkBranch(
  head: string,
  kind: (id: string) => NodeKind,
  next: (id: string) => string[],
  chain: (start: string, transforms: string[]) => string,
  visit: (id: string) => void,
): Branch | GraphProblem {
  if (kind(head) === "sink") return { rule: null, head, transforms: [], sinks: [head] };
  const transforms = kind(head) === "transform" ? [head] : [];
  const end = chain(head, transforms);
  const sinks = next(end);
  if (sinks.length === 0) return { message: "Connect each branch through to a sink.", nodeIds: [end] };
  const rules = sinks.filter((id) => kind(id) === "rule");
  if (rules.length > 0)
    return { message: "A rule starts right after the source or the shared transforms.", nodeIds: rules };
  if (sinks.some((id) => kind(id) !== "sink"))
    return {
      message: "Within a rule only its sinks fork: start each branch with a rule of its own.",
      nodeIds: [end],
    };
  sinks.forEach(visit);
  return { rule: kind(head) === "rule" ? head : null, head, transforms, sinks };
}

function countProblems(nodes: GraphNode[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const sources = nodes.filter((n) => n.data.kind === "source");
  if (sources.length === 0) problems.push({ message: "Add a source.", nodeIds: [] });
  if (sources.length > 1)
    problems.push({ message: "A channel has exactly one source.", nodeIds: sources.map((n) => n.id) });
  if (!nodes.some((n) => n.data.kind === "sink")) problems.push({ message: "Add a sink.", nodeIds: [] });
  return problems;
}

function fail(message: string, nodeIds: string[]): Analysis {
  return { ok: false, problems: [{ message, nodeIds }] };
}

class LoopError extends Error {
  constructor(readonly nodeId: string) {
    super(LOOP);
  }
}

/**
 * Whether ``id`` stands before the rules: the source, or a transform every node above which
 * (back to the source) is a transform or the source with this one path out. A second edge out
 * of such a node forks the channel into rules.
 */
export function isShared(nodes: GraphNode[], edges: GraphEdge[], id: string): boolean {
  const kinds = new Map(nodes.map((n) => [n.id, n.data.kind]));
  const parent = new Map(edges.map((e) => [e.target, e.source]));
  const children = groupBy(edges, (e) => e.source);
  const seen = new Set<string>();
  let current: string | undefined = id;
  let first = true;
  while (current !== undefined && !seen.has(current)) {
    seen.add(current);
    const kind = kinds.get(current);
    if (kind === "source") return first || (children.get(current)?.length ?? 0) === 1;
    if (kind !== "transform") return false;
    if (!first && (children.get(current)?.length ?? 0) !== 1) return false;
    first = false;
    current = parent.get(current);
  }
  return false;
}
