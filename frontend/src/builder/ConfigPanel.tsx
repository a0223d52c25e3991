import { usePlugins } from "../api/hooks";
import { NextStage } from "./NextStage";
import { PatternBench } from "./PatternBench";
import { pluginIndex, pluginKey } from "./plugins";
import { RulePanel } from "./RulePanel";
import { StageProblems, withoutKey } from "./StageProblems";
import { StageForm } from "./StageForm";
import { useBuilder } from "./store";

/** The selected stage: its config form (checked as you type, see useStageValidation) and tools. */
export function ConfigPanel({ nodeId }: { nodeId: string }) {
  const node = useBuilder((s) => s.nodes.find((n) => n.id === nodeId));
  const errors = useBuilder((s) => s.nodeErrors[nodeId]);
  const setConfig = useBuilder((s) => s.setConfig);
  const deleteNode = useBuilder((s) => s.deleteNode);
  const plugins = usePlugins();
  const plugin = node ? pluginIndex(plugins.data).get(pluginKey(node.data.kind, node.data.type)) : undefined;
  if (!node) return null;
  if (node.data.kind === "rule") return <RulePanel nodeId={nodeId} />;
  if (!plugin) return <p className="muted">Loading the {node.data.type} plugin…</p>;
  const stageErrors = errors?.[""];
  // The stage's own problems (its type, e.g. one the execution mode cannot run) are listed
  // above the form; passed to it, they would mark every field of the form as invalid.
  const fieldErrors = errors && stageErrors ? withoutKey(errors, "") : errors;
  return (
    <div className="config-panel">
      <div className="panel-head">
        <div>
          <div className="stage-kind">{node.data.kind}</div>
          <h2>{plugin.title}</h2>
        </div>
        <button type="button" className="danger" onClick={() => deleteNode(nodeId)}>
          Delete stage
        </button>
      </div>
      <p className="small muted">{plugin.description}</p>
      <StageProblems messages={stageErrors} />
      {node.data.kind !== "sink" && <NextStage nodeId={nodeId} />}
      <StageForm
        key={nodeId}
        idPrefix={`cfg-${nodeId}`}
        stageType={node.data.type}
        plugin={plugin}
        config={node.data.config}
        errors={fieldErrors}
        onChange={(next) => setConfig(nodeId, next)}
      />
      {node.data.type === "filter" && <PatternBench pattern={node.data.config.pattern} />}
    </div>
  );
}
