/**
 * The API's enums as lists the console can show (filter options, a bulk action's targets).
 *
 * The generated ./schema.d.ts carries them as types only. Each list here is read off a record
 * keyed by its enum type, so `tsc` fails as soon as the API adds or drops a value (after
 * `make api-types`) until the value is placed here: the set comes from the API, only the order
 * shown is the console's.
 */

import type { HealthLevel, ShownState, TargetState } from "./types";

/** The keys of `rank`, lowest rank first. */
export function byRank<K extends string>(rank: Record<K, number>): K[] {
  return (Object.keys(rank) as K[]).sort((a, b) => rank[a] - rank[b]);
}

/** Shown states, most in need of attention first: the server's `?ordering=state`
 * (console/api/channels/listing.py, STATE_RANK). */
export const SHOWN_STATES: ShownState[] = byRank<ShownState>({
  FAILED: 0,
  NOT_REPORTING: 1,
  RESTARTING: 2,
  UNASSIGNED: 3,
  PAUSED: 4,
  RUNNING: 5,
  STOPPED: 6,
});

/** Health levels, worst first: the server's `?ordering=health` (HEALTH_RANK). */
export const HEALTH_LEVELS: HealthLevel[] = byRank<HealthLevel>({ critical: 0, warning: 1, ok: 2, idle: 3 });

/** What a user can ask a channel to be, as the lifecycle goes. */
export const TARGET_STATES: TargetState[] = byRank<TargetState>({ RUNNING: 0, PAUSED: 1, STOPPED: 2 });
