/** What the signed-in user may do (GET /api/v1/me/), with the reason a control is disabled. */

import { EVERYONE, useMe } from "../api/hooks";

export type Ability = "operate" | "operate_workers" | "edit";

const NEEDS: Record<Ability, string> = {
  operate: "Needs the operator role (start, stop, pause, resume, restart, offsets).",
  operate_workers: "Needs the operator role (drain, return to service, forget workers).",
  edit: "Needs the editor role (create, save and delete channels).",
};

export interface Permission {
  allowed: boolean;
  /** Why not, for a title or tooltip; empty when allowed. */
  reason: string;
}

/** Allowed while /me is loading or absent (a 404 means "all allowed"); the server still checks. */
export function useCan(ability: Ability): Permission {
  const me = useMe();
  const can = (me.data ?? EVERYONE).can;
  const allowed = Boolean(can[ability]);
  return { allowed, reason: allowed ? "" : NEEDS[ability] };
}
