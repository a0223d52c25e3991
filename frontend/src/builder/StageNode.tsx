import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";

import { usePlugins } from "../api/hooks";
import { pluginIndex, pluginKey } from "./plugins";
import { useBuilder, type StageNode as StageNodeType } from "./store";

/** The one node component: a stage of any plugin, looked up in the catalogue. */
export const StageNode = memo(function StageNode({ id, data, selected }: NodeProps<StageNodeType>) {
  const plugins = usePlugins();
  const plugin = pluginIndex(plugins.data).get(pluginKey(data.kind, data.type));
  const errors = useBuilder((state) => state.nodeErrors[id]);
  const count = errors ? Object.values(errors).reduce((n, list) => n + list.length, 0) : 0;
  const detail = typeof data.detail === "string" ? data.detail : null;
  return (
    <div
      className={`stage-node kind-${data.kind}${selected ? " selected" : ""}${count ? " invalid" : ""}`}
      data-testid={`node-${data.kind}-${data.type}`}
      role="group"
      aria-label={`${data.kind} ${plugin?.title ?? data.type}${count ? `, ${count} problem(s)` : ""}`}
    >
      {data.kind !== "source" && <Handle type="target" position={Position.Left} title="input" />}
      <div className="stage-kind">{data.kind}</div>
      <div className="stage-title">{plugin?.title ?? data.type}</div>
      <div className="stage-type small muted">{data.type}</div>
      {detail && <div className="stage-detail small">{detail}</div>}
      {count > 0 && (
        <div className="stage-errors" role="status">
          {count} problem{count > 1 ? "s" : ""}
        </div>
      )}
      {data.kind !== "sink" && <Handle type="source" position={Position.Right} title="output" />}
    </div>
  );
});

export const nodeTypes = { stage: StageNode };
