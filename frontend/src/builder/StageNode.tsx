import { Handle, Position, type NodeProps } from "@xyflow/react";
import { memo } from "react";

import { usePlugins } from "../api/hooks";
import { patternSummary, ruleName } from "../graph/rules";
import { pluginIndex, pluginKey } from "./plugins";
import { ShapeWarning } from "./ShapeWarning";
import { stageSummary } from "./stageSummary";
import { useBuilder, type StageNode as StageNodeType } from "./store";

/** The one node component of the stages: a stage of any plugin, looked up in the catalogue. */
export const StageNode = memo(function StageNode({ id, data, selected }: NodeProps<StageNodeType>) {
  const plugins = usePlugins();
  const plugin = pluginIndex(plugins.data).get(pluginKey(data.kind, data.type));
  const count = useProblemCount(id, data.readOnly === true);
  const detail = typeof data.detail === "string" ? data.detail : null;
  const summary = stageSummary(data.type, data.config);
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
      <div className="stage-type small muted" title={summary || undefined}>
        {data.type}
        {summary && ` · ${summary}`}
      </div>
      {detail && <Detail text={detail} />}
      <MatchMark id={id} readOnly={data.readOnly === true} />
      {data.kind !== "source" && data.readOnly !== true && <ShapeWarning type={data.type} config={data.config} />}
      <Problems count={count} />
      {data.kind !== "sink" && <Handle type="source" position={Position.Right} title="output" />}
    </div>
  );
});

/** A rule of a bus: its name, whether it is on, what its pattern matches. */
export const RuleNode = memo(function RuleNode({ id, data, selected }: NodeProps<StageNodeType>) {
  const count = useProblemCount(id, data.readOnly === true);
  const name = ruleName(data.config) || "(no name)";
  const enabled = data.config.enabled !== false;
  const detail = typeof data.detail === "string" ? data.detail : null;
  return (
    <div
      className={`stage-node kind-rule${selected ? " selected" : ""}${count ? " invalid" : ""}${enabled ? "" : " disabled"}`}
      data-testid={`node-rule-${name}`}
      role="group"
      aria-label={`rule ${name}${enabled ? "" : " (disabled)"}${count ? `, ${count} problem(s)` : ""}`}
    >
      <Handle type="target" position={Position.Left} title="input" />
      <div className="stage-kind">rule{enabled ? "" : " · disabled"}</div>
      <div className="stage-title">{name}</div>
      <div className="stage-type small muted">{patternSummary(data.config.pattern)}</div>
      {detail && <Detail text={detail} />}
      <MatchMark id={id} readOnly={data.readOnly === true} />
      {data.readOnly !== true && <ShapeWarning type="filter" config={data.config} />}
      <Problems count={count} />
      <Handle type="source" position={Position.Right} title="output" />
    </div>
  );
});

/** The builder's problems on a node; none on a read-only canvas (the channel page's), whose
 * node ids are not the builder's. */
function useProblemCount(id: string, readOnly: boolean): number {
  const errors = useBuilder((state) => (readOnly ? undefined : state.nodeErrors[id]));
  return errors ? Object.values(errors).reduce((n, list) => n + list.length, 0) : 0;
}

/** Whether the test bench's sample event went down this branch. */
function MatchMark({ id, readOnly }: { id: string; readOnly: boolean }) {
  const matched = useBuilder((state) => (readOnly ? undefined : state.ruleMatches?.[id]));
  if (matched === undefined) return null;
  return (
    <div className={`rule-match ${matched ? "yes" : "no"}`} data-testid="rule-match">
      {matched ? "✓ sample matches" : "✗ no match"}
    </div>
  );
}

/** A node's counts ("1.2K in · 1.2K out"), each figure kept whole on one line. */
function Detail({ text }: { text: string }) {
  return (
    <div className="stage-detail" data-testid="stage-detail">
      {text.split(" · ").map((part, i) => (
        <span key={i} className="stage-count">
          {part}
        </span>
      ))}
    </div>
  );
}

function Problems({ count }: { count: number }) {
  if (count === 0) return null;
  return (
    <div className="stage-errors" role="status">
      {count} problem{count > 1 ? "s" : ""}
    </div>
  );
}

export const nodeTypes = { stage: StageNode, rule: RuleNode };
