/** The canvas as the graph logic sees it: nodes (stages and rules) and edges. */

import type { PluginKind } from "../api/types";

/** A stage of a plugin, or a rule of a bus (its name, pattern and switch, in `config`). */
export type NodeKind = PluginKind | "rule";

export interface StageData {
  kind: NodeKind;
  /** The plugin type; "rule" for a rule. */
  type: string;
  /** The stage's config; for a rule: {name, enabled, description?, pattern?} (see rules.ts). */
  config: Record<string, unknown>;
  /** Shown on a read-only canvas (the channel page's): no builder state on it. */
  readOnly?: boolean;
  /** A line of counts under the node (the channel page's). */
  detail?: string;
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

export const NODE_SPACING = 240;
export const ROW_SPACING = 130;

export const edgeId = (source: string, target: string) => `e-${source}-${target}`;
