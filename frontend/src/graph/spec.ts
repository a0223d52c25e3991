/**
 * Graph logic of the builder, free of React: a channel spec is a chain
 * source → transforms… → sink; the canvas holds it as nodes and edges.
 *
 * specToGraph and graphToSpec are inverse on well-formed graphs; checkGraph names
 * every problem that keeps a canvas from being a spec, with the nodes involved.
 */

import type { ChannelSpec, ErrorPolicy, PluginKind, RuntimeOptions, Stage } from "../api/types";

export interface StageData {
  kind: PluginKind;
  type: string;
  config: Record<string, unknown>;
  [key: string]: unknown;
}

export interface GraphNode {
  id: string;
  position: { x: number; y: number };
  data: StageData;
  type?: string;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
}

export interface GraphProblem {
  message: string;
  nodeIds: string[];
}

export const SECRET_MARKER = "__sluice_secret__";
export const NODE_SPACING = 240;

export const edgeId = (source: string, target: string) => `e-${source}-${target}`;

/** Lay a spec out left to right; ids n1, n2, … in chain order. */
export function specToGraph(spec: ChannelSpec): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const stages: { kind: PluginKind; stage: Stage }[] = [
    { kind: "source", stage: spec.source },
    ...spec.transforms.map((stage) => ({ kind: "transform" as const, stage })),
    { kind: "sink", stage: spec.sink },
  ];
  const nodes = stages.map(({ kind, stage }, index) => ({
    id: `n${index + 1}`,
    type: "stage",
    position: { x: index * NODE_SPACING, y: 0 },
    data: { kind, type: stage.type, config: stripSecrets(stage.config ?? {}) },
  }));
  const edges = nodes.slice(1).map((node, index) => {
    const source = nodes[index]!.id;
    return { id: edgeId(source, node.id), source, target: node.id };
  });
  return { nodes, edges };
}

/** Every problem that keeps the canvas from being one chain source → transforms → sink. */
export function checkGraph(nodes: GraphNode[], edges: GraphEdge[]): GraphProblem[] {
  const problems: GraphProblem[] = [];
  const sources = nodes.filter((n) => n.data.kind === "source");
  const sinks = nodes.filter((n) => n.data.kind === "sink");
  if (sources.length === 0) problems.push({ message: "Add a source.", nodeIds: [] });
  if (sources.length > 1)
    problems.push({
      message: "A channel has exactly one source.",
      nodeIds: sources.map((n) => n.id),
    });
  if (sinks.length === 0) problems.push({ message: "Add a sink.", nodeIds: [] });
  if (sinks.length > 1)
    problems.push({ message: "A channel has exactly one sink.", nodeIds: sinks.map((n) => n.id) });
  if (problems.length > 0) return problems;

  const outgoing = groupBy(edges, (e) => e.source);
  const incoming = groupBy(edges, (e) => e.target);
  for (const node of nodes) {
    if ((outgoing.get(node.id)?.length ?? 0) > 1)
      problems.push({ message: "A stage feeds exactly one next stage.", nodeIds: [node.id] });
    if ((incoming.get(node.id)?.length ?? 0) > 1)
      problems.push({ message: "A stage reads from exactly one stage.", nodeIds: [node.id] });
  }
  if (problems.length > 0) return problems;

  const chain = walk(sources[0]!.id, outgoing);
  const last = chain[chain.length - 1]!;
  if (chain.length > nodes.length) {
    problems.push({ message: "The stages form a loop.", nodeIds: chain });
    return problems;
  }
  if (last !== sinks[0]!.id) {
    problems.push({
      message: "Connect the chain from the source through to the sink.",
      nodeIds: [last],
    });
  }
  const reached = new Set(chain);
  const loose = nodes.filter((n) => !reached.has(n.id)).map((n) => n.id);
  if (loose.length > 0 && last === sinks[0]!.id)
    problems.push({ message: "Some stages are not connected to the chain.", nodeIds: loose });
  return problems;
}

/** Node ids in chain order from the source; [] when the graph is not a chain. */
export function chainOrder(nodes: GraphNode[], edges: GraphEdge[]): string[] {
  if (checkGraph(nodes, edges).length > 0) return [];
  const source = nodes.find((n) => n.data.kind === "source")!;
  return walk(source.id, groupBy(edges, (e) => e.source));
}

export type ToSpec =
  | { ok: true; spec: ChannelSpec; order: string[] }
  | { ok: false; problems: GraphProblem[] };

/**
 * The spec the canvas describes, or why it describes none. The error policy and the runtime
 * options are the channel's settings (not on the canvas); left out when null (the defaults).
 */
export function graphToSpec(
  nodes: GraphNode[],
  edges: GraphEdge[],
  errors?: ErrorPolicy | null,
  runtime?: RuntimeOptions | null,
): ToSpec {
  const problems = checkGraph(nodes, edges);
  if (problems.length > 0) return { ok: false, problems };
  const order = chainOrder(nodes, edges);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const stages = order.map((id) => toStage(byId.get(id)!.data));
  const misplaced = order.filter((id, index) => {
    const kind = byId.get(id)!.data.kind;
    if (index === 0) return kind !== "source";
    if (index === order.length - 1) return kind !== "sink";
    return kind !== "transform";
  });
  if (misplaced.length > 0)
    return {
      ok: false,
      problems: [{ message: "Transforms stand between the source and the sink.", nodeIds: misplaced }],
    };
  const spec: ChannelSpec = {
    source: stages[0]!,
    transforms: stages.slice(1, -1),
    sink: stages[stages.length - 1]!,
  };
  if (errors) spec.errors = errors;
  if (runtime) spec.runtime = runtime;
  return { ok: true, spec, order };
}

/** Whether an edge source → target may be drawn at all (kinds and self-loops). */
export function canConnect(nodes: GraphNode[], source: string, target: string): boolean {
  if (source === target) return false;
  const from = nodes.find((n) => n.id === source);
  const to = nodes.find((n) => n.id === target);
  if (!from || !to) return false;
  return from.data.kind !== "sink" && to.data.kind !== "source";
}

/**
 * Draw source → target, replacing the source's old outgoing edge and the target's old
 * incoming one, so re-connecting reorders transforms instead of branching the chain.
 */
export function connect(edges: GraphEdge[], source: string, target: string): GraphEdge[] {
  const kept = edges.filter((e) => e.source !== source && e.target !== target);
  return [...kept, { id: edgeId(source, target), source, target }];
}

/** Remove a node; its predecessor and successor are joined so the chain stays whole. */
export function removeNode(
  nodes: GraphNode[],
  edges: GraphEdge[],
  id: string,
): { nodes: GraphNode[]; edges: GraphEdge[] } {
  const before = edges.find((e) => e.target === id)?.source;
  const after = edges.find((e) => e.source === id)?.target;
  let kept = edges.filter((e) => e.source !== id && e.target !== id);
  if (before && after && canConnect(nodes, before, after)) kept = connect(kept, before, after);
  return { nodes: nodes.filter((n) => n.id !== id), edges: kept };
}

export interface ErrorTarget {
  /** "source", "sink", a transform index, or "errors" for the error policy. */
  stage: "source" | "sink" | "errors" | number | null;
  /**
   * The path inside the stage's config ("pattern", "security.password"), "" for the stage
   * itself (its type, e.g. one the channel's execution mode cannot run).
   */
  field: string;
}

/** Where a server error path ("spec.transforms[1].config.pattern") points. */
export function parseErrorPath(path: string): ErrorTarget {
  const rest = path.replace(/^spec\./, "");
  const transform = rest.match(/^transforms\[(\d+)\](?:\.(.*))?$/);
  let stage: ErrorTarget["stage"];
  let tail: string;
  if (transform) {
    stage = Number(transform[1]);
    tail = transform[2] ?? "";
  } else {
    const named = rest.match(/^(source|sink|errors)(?:\.(.*))?$/);
    if (!named) return { stage: null, field: rest };
    stage = named[1] as "source" | "sink" | "errors";
    tail = named[2] ?? "";
  }
  if (stage === "errors") return { stage, field: tail };
  const config = tail.match(/^config(?:\.(.*))?$/);
  return { stage, field: config ? (config[1] ?? "") : "" };
}

/** Group server errors by canvas node id (and field) using the chain order of the save. */
export function errorsByNode(
  errors: Record<string, string[]>,
  order: string[],
  configs: Record<string, unknown> = {},
): { nodes: Record<string, Record<string, string[]>>; other: Record<string, string[]> } {
  const nodes: Record<string, Record<string, string[]>> = {};
  const other: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(errors)) {
    const { stage, field } = parseErrorPath(path);
    let nodeId: string | undefined;
    if (stage === "source") nodeId = order[0];
    else if (stage === "sink") nodeId = order[order.length - 1];
    else if (typeof stage === "number") nodeId = order[stage + 1];
    if (nodeId === undefined) {
      other[path] = messages;
      continue;
    }
    const forNode = (nodes[nodeId] ??= {});
    const aligned = alignErrorPath(field, configs[nodeId]);
    forNode[aligned] = [...(forNode[aligned] ?? []), ...messages];
  }
  return { nodes, other };
}

/**
 * A server error path inside a config, re-aligned with the config: pydantic names the branch
 * of a tagged union in its paths ("auth.basic.username" for auth = {type: "basic", …}), the
 * form does not ("auth.username").
 */
export function alignErrorPath(path: string, config: unknown): string {
  const parts = path.split(".").filter(Boolean);
  const out: string[] = [];
  let cursor: unknown = config;
  for (const part of parts) {
    if (isPlainObject(cursor) && !(part in cursor) && cursor.type === part) continue;
    out.push(part);
    const key = part.replace(/\[\d+\]$/, "");
    cursor = isPlainObject(cursor) ? cursor[key] : undefined;
  }
  return out.join(".");
}

/** Messages keyed by config path → rjsf extraErrors ({pattern: {__errors: […]}}). */
export function toFormErrors(fields: Record<string, string[]>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [path, messages] of Object.entries(fields)) {
    const parts = path
      .replace(/\[(\d+)\]/g, ".$1")
      .split(".")
      .filter(Boolean);
    let cursor = root;
    for (const part of parts) {
      cursor = (cursor[part] ??= {}) as Record<string, unknown>;
    }
    const existing = (cursor.__errors as string[] | undefined) ?? [];
    cursor.__errors = [...existing, ...messages];
  }
  return root;
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

function toStage(data: StageData): Stage {
  return { type: data.type, config: data.config };
}

function walk(start: string, outgoing: Map<string, GraphEdge[]>): string[] {
  const chain = [start];
  const seen = new Set(chain);
  let current = start;
  for (;;) {
    const next = outgoing.get(current)?.[0]?.target;
    if (next === undefined) return chain;
    chain.push(next);
    if (seen.has(next)) return [...chain, ...chain]; // a loop: longer than any chain
    seen.add(next);
    current = next;
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    out.set(k, [...(out.get(k) ?? []), item]);
  }
  return out;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
