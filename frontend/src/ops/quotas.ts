/** A team's use against its quotas, as the console says it ("payments: 12 of 20 channels ·
 * 3 of 5 running"). The server counts (GET /api/v1/teams/); this only words it. */

import type { Team, TeamQuotas } from "../api/types";

/** The quotas worded here, with their unit; driver cores and memory are the runtime's own. */
const WORDED: [keyof TeamQuotas, string][] = [
  ["max_channels", "channels"],
  ["max_running_channels", "running"],
  ["max_realtime_cores", "real-time cores"],
];

/** "12 of 20 channels · 3 of 5 running": each quota set, against its use; "" when none is. */
export function quotaUse(quotas: TeamQuotas): string {
  return WORDED.flatMap(([key, unit]) => {
    const { limit, used } = quotas[key];
    return limit === null ? [] : [`${used ?? "?"} of ${limit} ${unit}`];
  }).join(" · ");
}

/** "payments: 12 of 20 channels · 3 of 5 running"; "" for a team without quotas. */
export function teamQuotaText(team: Team): string {
  const use = quotaUse(team.quotas);
  return use ? `${team.name}: ${use}` : "";
}

/** Whether the team has reached a quota it is worded by: no room for one more of it. */
export function reachedQuotas(quotas: TeamQuotas): string[] {
  return WORDED.filter(([key]) => {
    const { limit, used } = quotas[key];
    return limit !== null && used !== null && used >= limit;
  }).map(([key]) => key);
}
