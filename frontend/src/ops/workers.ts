/** Runtime workers' service (in service, draining, drained) and the actions a row offers. */

import type { WorkerCapacity } from "../api/types";
import type { DrainResult, WorkerAction } from "../api/workerHooks";

export type Service = "IN_SERVICE" | "DRAINING" | "DRAINED";

export interface WorkerLike {
  worker_id: string;
  state: string;
  service: Service | string;
}

export interface ActionButton {
  action: WorkerAction;
  label: string;
  enabled: boolean;
  /** Why it is disabled (a tooltip), or what it does when enabled. */
  title: string;
}

const SERVICE_LABELS: Record<string, string> = {
  IN_SERVICE: "in service",
  DRAINING: "draining",
  DRAINED: "drained",
};

export function serviceLabel(service: string): string {
  return SERVICE_LABELS[service] ?? service.toLowerCase();
}

/**
 * The buttons of one worker's row: Drain while in service, Back in service while draining
 * or drained, Forget for a dead worker (a live one is disabled with the reason; the server
 * refuses it with 409 anyway). ``denied`` is the reason the user may not act (no role).
 */
export function workerButtons(worker: WorkerLike, denied: string): ActionButton[] {
  const dead = worker.state === "DEAD";
  const buttons: ActionButton[] =
    worker.service === "IN_SERVICE"
      ? [
          {
            action: "drain",
            label: "Drain",
            enabled: true,
            title: "Move its channels to other workers (each resumes from its checkpoint) and give it no new ones",
          },
        ]
      : [{ action: "undrain", label: "Back in service", enabled: true, title: "Let it take new channels again" }];
  buttons.push({
    action: "forget",
    label: "Forget",
    enabled: dead,
    title: dead
      ? "Drop this dead worker's registration"
      : "Only a dead worker can be forgotten: drain it, stop its process, then forget it",
  });
  if (!denied) return buttons;
  return buttons.map((b) => ({ ...b, enabled: false, title: denied }));
}

/** The other live workers in service, which would take a drained worker's channels. */
export function takersFor(workerId: string, all: { worker_id: string; state: string; service: string }[]): string[] {
  return all
    .filter((w) => w.worker_id !== workerId && w.state === "ALIVE" && w.service === "IN_SERVICE")
    .map((w) => w.worker_id);
}

/** What to ask before an action; null when none is needed. ``takers``: the workers that would
 * take a drained worker's channels (none: they stay where they run until one is alive). */
export function confirmation(
  worker: WorkerLike,
  action: WorkerAction,
  channels: number,
  takers: string[] = [],
): string | null {
  if (action === "drain") {
    const one = channels === 1;
    const count = `${channels} channel${one ? "" : "s"}`;
    const what =
      channels === 0
        ? "It hosts no channel."
        : takers.length === 0
          ? `No other live worker is in service: its ${count} ${one ? "keeps" : "keep"} running on it until one is, then ${one ? "moves" : "move"} there.`
          : `Its ${count} ${one ? "moves" : "move"} to ${takers.join(", ")}, each resuming from its checkpoint.`;
    return `Drain ${worker.worker_id}? ${what} It gets no new channels until it is back in service.`;
  }
  if (action === "forget") return `Forget ${worker.worker_id}? A worker that starts again with this id registers anew.`;
  return null;
}

/** The message after a successful action. */
export function actionMessage(workerId: string, action: WorkerAction, result: unknown): string {
  if (action === "forget") return `Forgot ${workerId}.`;
  if (action === "undrain") return `${workerId} is back in service.`;
  const drain = result as DrainResult | null;
  if (!drain) return `Draining ${workerId}.`;
  if (!drain.changed) return `${workerId} is already ${serviceLabel(drain.worker.service)}.`;
  if (drain.channels.length === 0) return `Draining ${workerId}: it hosts no channel.`;
  const count = `${drain.channels.length} channel${drain.channels.length === 1 ? "" : "s"}`;
  if (drain.takers.length === 0)
    return `Draining ${workerId}: no other worker in service, its ${count} stay until one is alive.`;
  return `Draining ${workerId}: its ${count} move to ${drain.takers.join(", ")}.`;
}

/** The Workers page's service filter: "" (every worker) or one service state. */
export const SERVICE_FILTERS: { value: "" | Service; label: string }[] = [
  { value: "", label: "All" },
  { value: "IN_SERVICE", label: "In service" },
  { value: "DRAINING", label: "Draining" },
  { value: "DRAINED", label: "Drained" },
];

/**
 * The Workers page's capacity cells: the cores its real-time queries hold of those it has
 * ("1 / 4"), and how many runtime slots it owns; "—" for what it has not said.
 */
export function capacityCells(capacity: WorkerCapacity | null | undefined): { cores: string; slots: string } {
  const said = capacity ?? {};
  const cores = said.cores === undefined ? "—" : `${said.cores_held ?? 0} / ${said.cores}`;
  const slots = said.slots === undefined ? "—" : String(said.slots.length);
  return { cores, slots };
}
