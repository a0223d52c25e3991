import { ReactFlow, ReactFlowProvider } from "@xyflow/react";
import { useMemo } from "react";

import type { ChannelSpec, ChannelStatus } from "../api/types";
import { nodeTypes } from "../builder/StageNode";
import { specToGraph } from "../graph/spec";
import { eventsPerSecond } from "../ui/format";
import { ruleDetails, stageDetails } from "./stageCounts";

/** The channel's graph, read-only, each node with its counts (per stage, per rule, per target). */
export function PipelineCanvas({ spec, status }: { spec: ChannelSpec; status?: ChannelStatus }) {
  const graph = useMemo(() => specToGraph(spec), [spec]);
  const rate = eventsPerSecond(status);
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
        fitViewOptions={{ maxZoom: 0.9 }}
        proOptions={{ hideAttribution: true }}
      />
    </ReactFlowProvider>
  );
}
