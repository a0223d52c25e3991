import { RULE_SCHEMA, ruleName } from "../graph/rules";
import { StageProblems, withoutKey } from "./StageProblems";
import { NextStage } from "./NextStage";
import { RulesBench } from "./RulesBench";
import { StageForm } from "./StageForm";
import { useBuilder } from "./store";

const RULE_FORM = { config_schema: RULE_SCHEMA };

/** A selected rule of a bus: its name, switch, pattern and description, and the rules bench. */
export function RulePanel({ nodeId }: { nodeId: string }) {
  const node = useBuilder((s) => s.nodes.find((n) => n.id === nodeId));
  const errors = useBuilder((s) => s.nodeErrors[nodeId]);
  const setConfig = useBuilder((s) => s.setConfig);
  const deleteNode = useBuilder((s) => s.deleteNode);
  if (!node) return null;
  const ownErrors = errors?.[""];
  return (
    <div className="config-panel">
      <div className="panel-head">
        <div>
          <div className="stage-kind">rule</div>
          <h2>Rule {ruleName(node.data.config)}</h2>
        </div>
        <button type="button" className="danger" onClick={() => deleteNode(nodeId)}>
          Delete rule
        </button>
      </div>
      <p className="small muted">
        The events this rule&apos;s pattern matches (after the shared transforms) go through the stages after it to each
        of its sinks: draw more sinks from its last stage to send to several. An event goes to every enabled rule it
        matches.
      </p>
      <StageProblems messages={ownErrors} />
      <NextStage nodeId={nodeId} />
      <StageForm
        key={nodeId}
        idPrefix={`rule-${nodeId}`}
        stageType="rule"
        plugin={RULE_FORM}
        config={node.data.config}
        errors={errors && ownErrors ? withoutKey(errors, "") : errors}
        onChange={(next) => setConfig(nodeId, next)}
      />
      <RulesBench />
    </div>
  );
}
