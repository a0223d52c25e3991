import { usePlugins } from "../api/hooks";
import { canConnect } from "../graph/spec";
import { PatternBench } from "./PatternBench";
import { pluginIndex, pluginKey } from "./plugins";
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
      {stageErrors && (
        <div role="alert">
<ul className="error small">
          {stageErrors.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
</div>
      )}
      {node.data.kind !== "sink" && <NextStage nodeId={nodeId} />}
      <StageForm
        key={nodeId}
        idPrefix={`cfg-${nodeId}`}
        plugin={plugin}
        config={node.data.config}
        errors={fieldErrors}
        onChange={(next) => setConfig(nodeId, next)}
      />
      {node.data.type === "filter" && <PatternBench pattern={node.data.config.pattern} />}
    </div>
  );
}

/** Connect this stage to the next one without a mouse (re-choosing reorders the chain). */
function NextStage({ nodeId }: { nodeId: string }) {
  const nodes = useBuilder((s) => s.nodes);
  const edges = useBuilder((s) => s.edges);
  const connect = useBuilder((s) => s.connect);
  const onEdgesChange = useBuilder((s) => s.onEdgesChange);
  const plugins = usePlugins();
  const index = pluginIndex(plugins.data);
  const current = edges.find((e) => e.source === nodeId);
  const candidates = nodes.filter((n) => canConnect(nodes, nodeId, n.id));
  return (
    <label className="field">
      <span>Feeds into</span>
      <select
        value={current?.target ?? ""}
        onChange={(event) => {
          const target = event.target.value;
          if (target) connect(nodeId, target);
          else if (current) onEdgesChange([{ type: "remove", id: current.id }]);
        }}
      >
        <option value="">(not connected)</option>
        {candidates.map((n) => (
          <option key={n.id} value={n.id}>
            {index.get(pluginKey(n.data.kind, n.data.type))?.title ?? n.data.type} ({n.data.kind}, {n.id})
          </option>
        ))}
      </select>
    </label>
  );
}

function withoutKey<T>(record: Record<string, T>, key: string): Record<string, T> {
  const copy = { ...record };
  delete copy[key];
  return copy;
}
