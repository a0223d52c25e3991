import { useState } from "react";

import type { TargetState } from "../api/types";
import { EVERYONE, useMe } from "../api/hooks";
import { permissionIn } from "../ui/permissions";
import { allowed } from "./actions";
import { type BulkAction, bulkMessages, deleteConfirmText, useBulkAction } from "./fleet";

const ACTIONS: { action: BulkAction; label: string }[] = [
  { action: "start", label: "Start" },
  { action: "pause", label: "Pause" },
  { action: "resume", label: "Resume" },
  { action: "restart", label: "Restart" },
  { action: "stop", label: "Stop" },
  { action: "delete", label: "Delete" },
];

/**
 * Actions on many channels in one request (`POST /channels/bulk`): the selected `names`, or
 * (`names` null) every channel the list's `filter` keeps. The answer comes per channel; `onDone`
 * gets a summary line and one line per channel that failed.
 */
export function FleetActions({
  names,
  filter,
  targets,
  size,
  teams,
  onDone,
}: {
  names: string[] | null;
  filter: Record<string, unknown>;
  targets: (TargetState | undefined)[];
  size: number;
  /** The selected channels' teams (`null`: all matching): the roles there decide. */
  teams: string[] | null;
  onDone: (messages: string[]) => void;
}) {
  const bulk = useBulkAction();
  const me = useMe().data ?? EVERYONE;
  const operate = permissionIn(me, teams, "operate");
  const edit = permissionIn(me, teams, "edit");
  const [busy, setBusy] = useState(false);
  const run = async (action: BulkAction) => {
    if (action === "delete" && !window.confirm(deleteConfirmText(names, size))) return;
    setBusy(true);
    try {
      const answer = await bulk.mutateAsync(names === null ? { action, filter } : { action, names });
      const { summary, failures } = bulkMessages(answer);
      onDone([summary, ...failures]);
    } catch (error) {
      onDone([`${action}: ${(error as Error).message}`]);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="actions" role="group" aria-label="Actions on the selected channels">
      {ACTIONS.map(({ action, label }) => {
        const can = action === "delete" ? edit : operate;
        const sensible = action === "delete" || targets.some((t) => allowed(action, t));
        return (
          <button
            key={action}
            type="button"
            data-testid={`bulk-${action}`}
            className={
              action === "start" || action === "resume"
                ? "primary"
                : action === "stop" || action === "delete"
                  ? "danger"
                  : ""
            }
            disabled={busy || !can.allowed || size === 0 || !sensible}
            title={can.reason || undefined}
            onClick={() => void run(action)}
          >
            {label}
          </button>
        );
      })}
    </div>
  );
}
