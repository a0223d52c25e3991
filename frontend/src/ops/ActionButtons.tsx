import { useState } from "react";

import { useChannelAction } from "../api/hooks";
import type { ChannelAction, TargetState } from "../api/types";
import { useCan } from "../ui/permissions";
import { actionTitle, allowed } from "./actions";

const ACTIONS: { action: ChannelAction; label: string; does: string }[] = [
  { action: "start", label: "Start", does: "Start with the latest saved revision" },
  { action: "pause", label: "Pause", does: "Stop the query, keep its driver warm" },
  { action: "resume", label: "Resume", does: "Run the paused query again, with the revision it had" },
  {
    action: "restart",
    label: "Restart",
    does: "Restart the revision that runs, from its checkpoint (Deploy puts a saved one to work)",
  },
  { action: "stop", label: "Stop", does: "Stop the query and release its driver; the checkpoint is kept" },
];

/** Start / pause / resume / restart / stop for one or many channels. */
export function ActionButtons({
  names,
  targets,
  onDone,
}: {
  names: string[];
  targets: (TargetState | undefined)[];
  onDone?: (messages: string[]) => void;
}) {
  const mutation = useChannelAction();
  const operate = useCan("operate");
  const [busy, setBusy] = useState(false);
  const run = async (action: ChannelAction) => {
    setBusy(true);
    const messages: string[] = [];
    for (const name of names) {
      try {
        await mutation.mutateAsync({ name, action });
      } catch (error) {
        messages.push(`${name}: ${(error as Error).message}`);
      }
    }
    setBusy(false);
    onDone?.(messages);
  };
  return (
    <div className="actions" role="group" aria-label="Channel actions">
      {ACTIONS.map(({ action, label, does }) => (
        <button
          key={action}
          type="button"
          className={action === "start" || action === "resume" ? "primary" : action === "stop" ? "danger" : ""}
          disabled={busy || !operate.allowed || names.length === 0 || !targets.some((t) => allowed(action, t))}
          title={operate.reason || actionTitle(action, does, targets)}
          onClick={() => void run(action)}
        >
          {label}
        </button>
      ))}
    </div>
  );
}
