/** Which lifecycle action a channel's desired state allows, and why not when it does not:
 * the buttons (ActionButtons, FleetActions) are enabled by this and say the reason in their
 * tooltip, so a disabled button is never a silent one. */

import type { ChannelAction, TargetState } from "../api/types";

/** Why `action` does not fit a channel whose desired state is `target`; "" when it does. The
 * server refuses the same ones (409) or does nothing with them. */
export function unavailableReason(action: ChannelAction, target: TargetState | undefined): string {
  switch (action) {
    case "start":
      if (target === "RUNNING")
        return "It is already meant to run (Restart runs it again; Deploy puts a saved revision to work).";
      if (target === "PAUSED")
        return "It is paused: Resume runs it again where it stopped (Deploy puts a saved revision to work).";
      return "";
    case "pause":
      return target === "RUNNING"
        ? ""
        : target === "PAUSED"
          ? "It is already paused."
          : "Only a running channel can be paused.";
    case "resume":
      return target === "PAUSED" ? "" : "Only a paused channel can be resumed.";
    case "restart":
      return target === "STOPPED" ? "It is stopped: Start runs it." : "";
    case "stop":
      return target === "STOPPED" ? "It is already stopped." : "";
  }
}

/** Whether `action` fits a channel whose desired state is `target`. */
export function allowed(action: ChannelAction, target: TargetState | undefined): boolean {
  return unavailableReason(action, target) === "";
}

/** The tooltip of an action's button for a selection: what it does when it fits at least one
 * channel, else why it fits none (the first channel's reason). */
export function actionTitle(action: ChannelAction, does: string, targets: (TargetState | undefined)[]): string {
  if (targets.length === 0 || targets.some((t) => allowed(action, t))) return does;
  return unavailableReason(action, targets[0]);
}
