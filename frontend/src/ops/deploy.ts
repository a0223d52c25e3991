import type { ChannelStatus, DeployPlan } from "../api/types";

/** Whether the channel page offers a deploy: a saved revision that does not run, or a failure
 * (a deploy starts it again, with the saved revision). */
export function deployWanted(status: ChannelStatus | undefined): boolean {
  return !!status && (status.drift || status.state === "FAILED");
}

/** What runs and what is saved, in a line. */
export function revisionLine(plan: DeployPlan): string {
  const { running_revision: running, saved_revision: saved } = plan;
  if (running === null) return `Revision ${saved} saved; never deployed.`;
  if (running === saved) return plan.state === "FAILED" ? `Revision ${saved} failed.` : `Runs revision ${saved}.`;
  const verb = plan.state === "FAILED" ? "Failed on" : plan.target_state === "STOPPED" ? "Last ran" : "Runs";
  return `${verb} revision ${running}; revision ${saved} is saved and not deployed yet.`;
}

/** The deploy's confirmation: which revision, where, and what it will do. */
export function deployQuestion(name: string, plan: DeployPlan): string {
  return `Deploy revision ${plan.saved_revision} of ${name}?\n\n${plan.summary}`;
}

/** The revision card: the one that runs, and the saved one when it differs. */
export function revisionCard(status: ChannelStatus | undefined): string {
  if (!status) return "—";
  const running = status.revision ?? null;
  const saved = status.latest_revision ?? null;
  if (running === null) return saved === null ? "—" : `${saved} saved`;
  return running === saved || saved === null ? `${running}` : `${running} deployed · ${saved} saved`;
}

/** The first line of a failure trace: the error, for the page's header. */
export function failureLine(trace: string | undefined | null): string {
  const line = (trace ?? "").split("\n").find((l) => l.trim() !== "");
  return line ? line.trim().slice(0, 300) : "";
}
