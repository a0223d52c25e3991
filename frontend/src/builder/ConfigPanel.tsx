import { usePlugins } from "../api/hooks";
import { ruleName } from "../graph/rules";
import { canConnect } from "../graph/spec";
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
        plugin={plugin}
        config={node.data.config}
        errors={fieldErrors}
        onChange={(next) => setConfig(nodeId, next)}
      />
      {node.data.type === "filter" && <PatternBench pattern={node.data.config.pattern} />}
    </div>
  );
}

/**
 * Connect this stage without a mouse: what it feeds (re-choosing reorders the chain), and,
 * from the end of a chain, a further branch (a second sink or rule forks the channel).
 */
function NextStage({ nodeId }: { nodeId: string }) {
  const nodes = useBuilder((s) => s.nodes);
  const edges = useBuilder((s) => s.edges);
  const connect = useBuilder((s) => s.connect);
  const retarget = useBuilder((s) => s.retarget);
  const plugins = usePlugins();
  const index = pluginIndex(plugins.data);
  const targets = edges.filter((e) => e.source === nodeId).map((e) => e.target);
  const current = targets[0];
  const candidates = nodes.filter((n) => canConnect(nodes, nodeId, n.id));
  const label = (n: (typeof nodes)[number]) =>
    n.data.kind === "rule"
      ? `Rule ${ruleName(n.data.config)} (${n.id})`
      : `${index.get(pluginKey(n.data.kind, n.data.type))?.title ?? n.data.type} (${n.data.kind}, ${n.id})`;
  return (
    <>
      <label className="field">
        <span>Feeds into</span>
        <select value={current ?? ""} onChange={(event) => retarget(nodeId, current ?? null, event.target.value || null)}>
          <option value="">(not connected)</option>
          {candidates.map((n) => (
            <option key={n.id} value={n.id}>
              {label(n)}
            </option>
          ))}
        </select>
      </label>
      {current && (
        <label className="field">
          <span>Add a branch to</span>
          <select value="" onChange={(event) => event.target.value && connect(nodeId, event.target.value)}>
            <option value="">{targets.length > 1 ? `(${targets.length} branches)` : "(none)"}</option>
            {candidates
              .filter((n) => !targets.includes(n.id))
              .map((n) => (
                <option key={n.id} value={n.id}>
                  {label(n)}
                </option>
              ))}
          </select>
        </label>
      )}
    </>
  );
}
