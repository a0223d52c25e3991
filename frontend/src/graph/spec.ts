/**
 * Graph logic of the builder, free of React: a channel spec is the source, a shared chain of
 * transforms, then one sink (a linear channel) or rules (a bus: each a pattern, its own
 * transforms and its sinks); the canvas holds it as nodes and edges (see branches.ts).
 *
 * specToGraph and graphToSpec are inverse on well-formed graphs; checkGraph names every
 * problem that keeps a canvas from being a spec, with the nodes involved.
 */

import type { ChannelSpec, ErrorPolicy, RuntimeOptions, Stage } from "../api/types";
import { analyzeGraph, isShared } from "./branches";
import { newRuleName, ruleConfig, ruleName, toRule } from "./rules";
import { edgeId, NODE_SPACING, ROW_SPACING, type GraphEdge, type GraphNode, type GraphProblem } from "./types";
import { isPlainObject } from "./util";

export { alignErrorPath, errorsByNode, parseErrorPath, toFormErrors, type ErrorTarget } from "./errors";
export {
  edgeId,
  NODE_SPACING,
  type GraphEdge,
  type GraphNode,
  type GraphProblem,
  type NodeKind,
  type StageData,
} from "./types";
export { isPlainObject } from "./util";

export const SECRET_MARKER = "__sluice_secret__";

/** Node id of each stage of a spec, by its path: "source", "transforms[0]", "sink", "rules[1]",
 * "rules[1].transforms[0]", "rules[1].sinks[2]" (where the server's errors point). */
export type StagePaths = Record<string, string>;

/**
 * Lay a spec out left to right, ids n1, n2, … in spec order: the source, the shared
 * transforms, then (a bus) each rule's node, transforms and sinks, one rule under the other.
 */
export function specToGraph(spec: ChannelSpec): { nodes: GraphNode[]; edges: GraphEdge[]; stages: StagePaths } {
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const stages: StagePaths = {};
  const add = (path: string, kind: GraphNode["data"]["kind"], stage: Stage, column: number, row: number) => {
    const id = `n${nodes.length + 1}`;
    const config = kind === "rule" ? stage.config : stripSecrets(stage.config ?? {});
    nodes.push({
      id,
      type: kind === "rule" ? "rule" : "stage",
      position: { x: column * NODE_SPACING, y: row * ROW_SPACING },
      data: { kind, type: stage.type, config },
    });
    stages[path] = id;
    return id;
  };
  const link = (source: string, target: string) => edges.push({ id: edgeId(source, target), source, target });

  const rules = spec.rules ?? [];
  const rows = rules.map((rule) => Math.max(1, rule.sinks.length));
  const middle =
    (Math.max(
      1,
      rows.reduce((a, b) => a + b, 0),
    ) -
      1) /
    2;
  let last = add("source", "source", spec.source, 0, middle);
  spec.transforms.forEach((stage, index) => {
    const id = add(`transforms[${index}]`, "transform", stage, index + 1, middle);
    link(last, id);
    last = id;
  });
  const fork = last;
  const ruleColumn = spec.transforms.length + 1;
  if (!spec.rules) {
    if (spec.sink) link(fork, add("sink", "sink", spec.sink, ruleColumn, middle));
    return { nodes, edges, stages };
  }
  const sinkColumn = ruleColumn + 1 + Math.max(0, ...rules.map((r) => (r.transforms ?? []).length));
  let top = 0;
  rules.forEach((rule, r) => {
    const row = top + (rows[r]! - 1) / 2;
    let previous = add(`rules[${r}]`, "rule", { type: "rule", config: ruleConfig(rule) }, ruleColumn, row);
    link(fork, previous);
    (rule.transforms ?? []).forEach((stage, t) => {
      const id = add(`rules[${r}].transforms[${t}]`, "transform", stage, ruleColumn + 1 + t, row);
      link(previous, id);
      previous = id;
    });
    rule.sinks.forEach((stage, s) =>
      link(previous, add(`rules[${r}].sinks[${s}]`, "sink", stage, sinkColumn, top + s)),
    );
    top += rows[r]!;
  });
  return { nodes, edges, stages };
}

/** Every problem that keeps the canvas from being a channel spec. */
export function checkGraph(nodes: GraphNode[], edges: GraphEdge[]): GraphProblem[] {
  const analysis = analyzeGraph(nodes, edges);
  return analysis.ok ? [] : analysis.problems;
}

export type ToSpec = { ok: true; spec: ChannelSpec; stages: StagePaths } | { ok: false; problems: GraphProblem[] };

/**
 * The spec the canvas describes, or why it describes none. One branch without a rule node is a
 * linear channel (`sink`); anything else a bus (`rules`, in the order the edges leaving the
 * fork were drawn; a branch without a rule node is named ``default`` when it is the first,
 * else rule-1, rule-2, …). The error
 * policy and the runtime options are the channel's settings (not on the canvas); left out
 * when null (the defaults).
 */
export function graphToSpec(
  nodes: GraphNode[],
  edges: GraphEdge[],
  errors?: ErrorPolicy | null,
  runtime?: RuntimeOptions | null,
): ToSpec {
  const analysis = analyzeGraph(nodes, edges);
  if (!analysis.ok) return analysis;
  const { structure } = analysis;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const stageOf = (id: string): Stage => ({ type: byId.get(id)!.data.type, config: byId.get(id)!.data.config });
  const stages: StagePaths = { source: structure.source };
  const spec: ChannelSpec = {
    source: stageOf(structure.source),
    transforms: structure.transforms.map((id, index) => {
      stages[`transforms[${index}]`] = id;
      return stageOf(id);
    }),
  };
  const [only, ...others] = structure.branches;
  if (others.length === 0 && only!.rule === null && only!.transforms.length === 0 && only!.sinks.length === 1) {
    spec.sink = stageOf(only!.sinks[0]!);
    stages.sink = only!.sinks[0]!;
  } else {
    const named = structure.branches.flatMap((b) => (b.rule ? [ruleName(byId.get(b.rule)!.data.config)] : []));
    spec.rules = structure.branches.map((branch, r) => {
      stages[`rules[${r}]`] = branch.rule ?? branch.head;
      branch.transforms.forEach((id, t) => (stages[`rules[${r}].transforms[${t}]`] = id));
      branch.sinks.forEach((id, s) => (stages[`rules[${r}].sinks[${s}]`] = id));
      const config = branch.rule ? byId.get(branch.rule)!.data.config : null;
      // The first branch without a rule node is the one a linear channel had: "default".
      const name = config ? ruleName(config) : newRuleName(named, r === 0);
      if (!config) named.push(name);
      return toRule(config, name, branch.transforms.map(stageOf), branch.sinks.map(stageOf));
    });
  }
  if (errors) spec.errors = errors;
  if (runtime) spec.runtime = runtime;
  return { ok: true, spec, stages };
}

/** Whether an edge source → target may be drawn at all (kinds and self-loops). */
export function canConnect(nodes: GraphNode[], source: string, target: string): boolean {
  if (source === target) return false;
  const from = nodes.find((n) => n.id === source);
  const to = nodes.find((n) => n.id === target);
  if (!from || !to) return false;
  if (from.data.kind === "rule" && to.data.kind === "rule") return false;
  return from.data.kind !== "sink" && to.data.kind !== "source";
}

/**
 * What drawing source → target does, by one rule (docs/console.md, "Build a channel", step 2):
 *
 * - "move": the target is a transform on source's own straight chain (reached from source, or
 *   source reached from it, through transforms that each have one link in and one out). It
 *   moves to right after source: its old neighbours are joined and source's old next stage
 *   follows it. Re-connecting inside a chain reorders it; no stage is left loose.
 * - "add": anything else. The link is added beside source's existing links, which all stay:
 *   a second link out of a stage forks (a second branch of the channel, each branch then a
 *   rule of a bus; within a rule, a further sink). The target's old input link, if it had
 *   one, goes: a stage reads from exactly one stage.
 * - "exists": the link is already drawn; nothing changes.
 *
 * Replacing a link (the side panel's "Feeds into") is a removal then a connect: see the store's
 * ``retarget``.
 */
export type ConnectionKind = "move" | "add" | "exists";

export function connectionKind(nodes: GraphNode[], edges: GraphEdge[], source: string, target: string): ConnectionKind {
  if (edges.some((e) => e.source === source && e.target === target)) return "exists";
  const kinds = new Map(nodes.map((n) => [n.id, n.data.kind]));
  if (kinds.get(target) !== "transform") return "add";
  const outs = (id: string) => edges.filter((e) => e.source === id);
  const input = (id: string) => edges.find((e) => e.target === id)?.source;
  // Down from source: each step the only link out of a stage, through transforms.
  let current = source;
  for (let steps = 0; steps <= edges.length && outs(current).length === 1; steps++) {
    current = outs(current)[0]!.target;
    if (current === target) return "move";
    if (kinds.get(current) !== "transform") break;
  }
  // Up from source: each step into a transform that links to nothing else.
  current = source;
  for (let steps = 0; steps <= edges.length && kinds.get(current) === "transform"; steps++) {
    const before = input(current);
    if (before === undefined || outs(before).length !== 1) break;
    if (before === target) return "move";
    current = before;
  }
  return "add";
}

/** Draw source → target as ``connectionKind`` says (see there). */
export function connect(nodes: GraphNode[], edges: GraphEdge[], source: string, target: string): GraphEdge[] {
  const kind = connectionKind(nodes, edges, source, target);
  if (kind === "exists") return edges;
  if (kind === "move") return moveAfter(edges, target, source);
  return [...edges.filter((e) => e.target !== target), { id: edgeId(source, target), source, target }];
}

/** The stages a second link from ``source`` forks to without touching any other link (the
 * side panel's "Add a branch to"): those that read from no stage yet and that ``connect`` adds
 * beside source's links; past the fork (inside a rule) only sinks, as only a rule's sinks fork. */
export function branchTargets(nodes: GraphNode[], edges: GraphEdge[], source: string): string[] {
  const reading = new Set(edges.map((e) => e.target));
  const shared = isShared(nodes, edges, source);
  return nodes
    .filter((n) => !reading.has(n.id) && canConnect(nodes, source, n.id))
    .filter((n) => shared || n.data.kind === "sink")
    .filter((n) => connectionKind(nodes, edges, source, n.id) === "add")
    .map((n) => n.id);
}

/** Take ``stage`` out of its place (its input joined to its outputs) and put it right after
 * ``after``, which hands its outputs over to it. */
function moveAfter(edges: GraphEdge[], stage: string, after: string): GraphEdge[] {
  const link = (source: string, target: string): GraphEdge => ({ id: edgeId(source, target), source, target });
  const input = edges.find((e) => e.target === stage)?.source;
  const outputs = edges.filter((e) => e.source === stage).map((e) => e.target);
  const rest = edges.filter((e) => e.source !== stage && e.target !== stage);
  if (input !== undefined) rest.push(...outputs.map((t) => link(input, t)));
  const handed = rest.filter((e) => e.source === after).map((e) => e.target);
  return [...rest.filter((e) => e.source !== after), link(after, stage), ...handed.map((t) => link(stage, t))];
}

/**
 * After an edge from ``fork`` was drawn: when ``fork`` stands before the rules and now feeds
 * more than one stage, each branch that does not start with a rule gets a rule node (every
 * event; named ``default`` for the branch of a linear channel that forks, as the server names
 * its implicit rule, else rule-1, rule-2, …) so its pattern can be set; the branch moves one
 * column right to make room. Returns the graph unchanged otherwise.
 */
export function insertRuleNodes(
  nodes: GraphNode[],
  edges: GraphEdge[],
  fork: string,
  newId: () => string,
): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const heads = edges.filter((e) => e.source === fork).map((e) => e.target);
  const kinds = new Map(nodes.map((n) => [n.id, n.data.kind]));
  if (heads.length < 2 || !isShared(nodes, edges, fork)) return { nodes, edges };
  const bare = heads.filter((id) => kinds.get(id) !== "rule");
  if (bare.length === 0) return { nodes, edges };
  const names = nodes.filter((n) => n.data.kind === "rule").map((n) => ruleName(n.data.config));
  const wasLinear = names.length === 0;
  let outNodes = [...nodes];
  let outEdges = [...edges];
  for (const head of bare) {
    const id = newId();
    // The branch drawn first is the one the linear channel had.
    const name = newRuleName(names, wasLinear && head === heads[0]);
    names.push(name);
    const at = outNodes.find((n) => n.id === head)!.position;
    const moved = new Set(descendants(outEdges, head));
    outNodes = outNodes.map((n) =>
      moved.has(n.id) ? { ...n, position: { x: n.position.x + NODE_SPACING, y: n.position.y } } : n,
    );
    outNodes.push({
      id,
      type: "rule",
      position: { ...at },
      data: { kind: "rule", type: "rule", config: ruleConfig({ name }) },
    });
    outEdges = outEdges.filter((e) => !(e.source === fork && e.target === head));
    outEdges.push(
      { id: edgeId(fork, id), source: fork, target: id },
      { id: edgeId(id, head), source: id, target: head },
    );
  }
  return { nodes: outNodes, edges: outEdges };
}

/** Remove a node; its predecessor is joined to each of its successors so the graph stays whole. */
export function removeNode(
  nodes: GraphNode[],
  edges: GraphEdge[],
  id: string,
): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const before = edges.find((e) => e.target === id)?.source;
  const after = edges.filter((e) => e.source === id).map((e) => e.target);
  const kept = edges.filter((e) => e.source !== id && e.target !== id);
  const rest = nodes.filter((n) => n.id !== id);
  for (const target of after) {
    if (before && canConnect(nodes, before, target)) kept.push({ id: edgeId(before, target), source: before, target });
  }
  return { nodes: rest, edges: kept };
}

/** A config without the server's secret markers: secrets are never shown or prefilled. */
export function stripSecrets(config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === SECRET_MARKER) continue;
    out[key] = isPlainObject(value) ? stripSecrets(value) : value;
  }
  return out;
}

/** ``id`` and every node after it. */
function descendants(edges: GraphEdge[], id: string): string[] {
  const out = [id];
  for (let i = 0; i < out.length; i++) {
    for (const e of edges) if (e.source === out[i] && !out.includes(e.target)) out.push(e.target);
  }
  return out;
}
