import { usePlugins } from "../api/hooks";
import { isShared } from "../graph/branches";
import { ruleName } from "../graph/rules";
import { branchTargets, canConnect } from "../graph/spec";
import { pluginIndex, pluginKey } from "./plugins";
import { useBuilder } from "./store";

/**
 * Connect this stage without a mouse. "Feeds into" replaces the link to the stage it feeds
 * (that stage is left unconnected); "Add a branch to" keeps it and adds a second link, which
 * forks the channel (or, inside a rule, adds a sink). Both follow connectionKind (graph/spec).
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
  const branches = new Set(branchTargets(nodes, edges, nodeId));
  const forks = isShared(nodes, edges, nodeId);
  const label = (n: (typeof nodes)[number]) =>
    n.data.kind === "rule"
      ? `Rule ${ruleName(n.data.config)} (${n.id})`
      : `${index.get(pluginKey(n.data.kind, n.data.type))?.title ?? n.data.type} (${n.data.kind}, ${n.id})`;
  const feedsHelp = `next-stage-help-${nodeId}`;
  const branchHelp = `branch-help-${nodeId}`;
  return (
    <>
      <label className="field">
        <span>Feeds into</span>
        <select
          value={current ?? ""}
          aria-describedby={current ? feedsHelp : undefined}
          onChange={(event) => retarget(nodeId, current ?? null, event.target.value || null)}
        >
          <option value="">(not connected)</option>
          {candidates.map((n) => (
            <option key={n.id} value={n.id}>
              {label(n)}
            </option>
          ))}
        </select>
      </label>
      {current && (
        <p className="small muted" id={feedsHelp}>
          Replaces the link: the stage it fed now reads from nothing.
        </p>
      )}
      {current && (
        <label className="field">
          <span>Add a branch to</span>
          <select
            value=""
            aria-describedby={branchHelp}
            onChange={(event) => event.target.value && connect(nodeId, event.target.value)}
          >
            <option value="">{targets.length > 1 ? `(${targets.length} branches)` : "(none)"}</option>
            {candidates
              .filter((n) => branches.has(n.id))
              .map((n) => (
                <option key={n.id} value={n.id}>
                  {label(n)}
                </option>
              ))}
          </select>
        </label>
      )}
      {current && (
        <p className="small muted" id={branchHelp}>
          {forks
            ? "Keeps the link above and forks the channel: each branch becomes a rule of a bus. Lists the stages that read from nothing yet."
            : "Keeps the link above: the sink becomes a further target of this rule. Lists the sinks that read from nothing yet."}
        </p>
      )}
    </>
  );
}
