import { useDeploy, useDeployPlan } from "../api/hooks";
import type { ChannelStatus } from "../api/types";
import { useCan } from "../ui/permissions";
import { deployQuestion, deployWanted, revisionLine } from "./deploy";

/** Which revision runs and which is saved, what deploying the saved one will do, and the one
 * action that does it (from RUNNING, PAUSED, FAILED or STOPPED). Shown only when there is
 * something to deploy. */
export function DeployBar({ name, status }: { name: string; status: ChannelStatus | undefined }) {
  const wanted = deployWanted(status);
  const version = `${status?.revision}/${status?.latest_revision}/${status?.state}/${status?.target_state}`;
  const plan = useDeployPlan(name, wanted, version);
  const deploy = useDeploy();
  const operate = useCan("operate");
  const p = plan.data;
  if (!wanted || !p || p.effect === "none") return null;
  const run = () => {
    if (window.confirm(deployQuestion(name, p))) deploy.mutate(name);
  };
  return (
    <div className="deploy-bar" role="region" aria-label="Deploy" data-testid="deploy-bar">
      <div>
        <p className="deploy-revisions">{revisionLine(p)}</p>
        <p className="small">{p.summary}</p>
        {p.changed.length > 0 && <p className="small muted">Changed: {p.changed.join(", ")}</p>}
        {deploy.error && (
          <p className="error small" role="alert">
            {(deploy.error as Error).message}
          </p>
        )}
      </div>
      <button
        type="button"
        className="primary"
        disabled={!operate.allowed || deploy.isPending}
        title={operate.reason || undefined}
        onClick={run}
      >
        Deploy revision {p.saved_revision}
      </button>
    </div>
  );
}
