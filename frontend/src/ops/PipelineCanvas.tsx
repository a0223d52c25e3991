import { ReactFlow, ReactFlowProvider } from "@xyflow/react";
import { useMemo } from "react";

import type { ChannelSpec, ChannelStatus } from "../api/types";
import { nodeTypes } from "../builder/StageNode";
import { specToGraph } from "../graph/spec";
import { liveEventsPerSecond } from "./channelView";
import { ruleDetails, stageDetails } from "./stageCounts";

/** The channel's graph, read-only, each node with its counts (per stage, per rule, per target). */
export function PipelineCanvas({ spec, status }: { spec: ChannelSpec; status?: ChannelStatus }) {
  const graph = useMemo(() => specToGraph(spec), [spec]);
  const rate = liveEventsPerSecond(status);
  const counts = stageDetails(status?.stages, graph.stages);
  const rules = ruleDetails(status?.rules, spec, graph.stages);
  const nodes = graph.nodes.map((n) => {
    const lines = [
      n.data.kind === "source" && rate !== null ? `${rate.toFixed(1)} events/s in` : null,
      counts.get(n.id) ?? null,
      rules.get(n.id) ?? null,
    ].filter((line): line is string => line !== null);
    const data = { ...n.data, readOnly: true };
    return { ...n, data: lines.length > 0 ? { ...data, detail: lines.join(" · ") } : data };
  });
  return (
    <div className="mini-canvas-scroll" tabIndex={0} role="region" aria-label="Pipeline graph">
      <div className="mini-canvas" style={canvasSize(graph.nodes)} data-testid="pipeline-canvas">
        <ReactFlowProvider>
          <ReactFlow
            nodes={nodes}
            edges={graph.edges.map((e) => ({ ...e, animated: status?.state === "RUNNING" }))}
            nodeTypes={nodeTypes}
            nodesDraggable={false}
            nodesConnectable={false}
            elementsSelectable={false}
            deleteKeyCode={null}
            fitView
            fitViewOptions={{ maxZoom: 1, minZoom: MIN_ZOOM, padding: 0.05 }}
            minZoom={MIN_ZOOM}
            proOptions={{ hideAttribution: true }}
          />
        </ReactFlowProvider>
      </div>
    </div>
  );
}

/** Below this zoom a node's counts get too small to read (12 px at zoom 1). */
const MIN_ZOOM = 0.95;
const NODE_WIDTH = 180;
const NODE_HEIGHT = 120;
const MARGIN = 24;

/** A canvas as large as the graph at zoom 1 (wider than the page: it scrolls), so fitting
 * the view never shrinks the nodes' counts to an unreadable size. */
export function canvasSize(nodes: { position: { x: number; y: number } }[]): { minWidth: number; height: number } {
  if (nodes.length === 0) return { minWidth: 0, height: 180 };
  const xs = nodes.map((n) => n.position.x);
  const ys = nodes.map((n) => n.position.y);
  return {
    minWidth: Math.max(...xs) - Math.min(...xs) + NODE_WIDTH + 2 * MARGIN,
    height: Math.max(180, Math.max(...ys) - Math.min(...ys) + NODE_HEIGHT + 2 * MARGIN),
  };
}
