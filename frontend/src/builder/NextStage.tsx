import { usePlugins } from "../api/hooks";
import { ruleName } from "../graph/rules";
import { canConnect } from "../graph/spec";
import { pluginIndex, pluginKey } from "./plugins";
import { useBuilder } from "./store";

/**
 * Connect this stage without a mouse: what it feeds (re-choosing reorders the chain), and,
 * from the end of a chain, a further branch (a second sink or rule forks the channel).
 */
export function NextStage({ nodeId }: { nodeId: string }) {
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
