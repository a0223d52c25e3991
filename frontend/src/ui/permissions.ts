/** What the signed-in user may do (GET /api/v1/me/), with the reason a control is disabled:
 * in the team of the channel on screen (ChannelTeam), else in any of their teams. */

import { createContext, useContext } from "react";

import { EVERYONE, useMe } from "../api/hooks";
import type { Me } from "../api/types";

/** The team of the channel a page shows: its controls follow the user's roles there. */
export const ChannelTeam = createContext<string | null>(null);

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

/** Allowed while /me is loading or absent (a 404 means "all allowed"); the server still checks.
 * Within a ChannelTeam (a channel's page, the builder of a saved channel), the user's roles in
 * that team; elsewhere, in any team. */
export function useCan(ability: Ability): Permission {
  const me = useMe();
  return permissionOf(me.data ?? EVERYONE, useContext(ChannelTeam), ability);
}

/** `ability` for the user `me` describes, in `team` (null: in any of their teams). */
export function permissionOf(me: Me, team: string | null, ability: Ability): Permission {
  const inTeam = team && !me.is_superuser ? me.teams.find((t) => t.name === team) : undefined;
  const can = inTeam ? inTeam.can : me.can;
  const allowed = Boolean(can[ability]);
  const reason = inTeam ? NEEDS[ability].replace(/ \(/, ` in team ${team} (`) : NEEDS[ability];
  return { allowed, reason: allowed ? "" : reason };
}

/** `ability` on channels of `teams` at once (a bulk action on a selection; the server answers
 * each channel in its own team): allowed when any of them allows it; the reason names them
 * all when none does. `null` or no team: in any of the user's teams. */
export function permissionIn(me: Me, teams: string[] | null, ability: Ability): Permission {
  if (!teams || teams.length <= 1) return permissionOf(me, teams?.[0] ?? null, ability);
  if (teams.some((team) => permissionOf(me, team, ability).allowed)) return { allowed: true, reason: "" };
  const named = `${teams.slice(0, -1).join(", ")} and ${teams[teams.length - 1]}`;
  return { allowed: false, reason: NEEDS[ability].replace(/ \(/, ` in teams ${named} (`) };
}

/** What the user sees, in a sentence: every team's channels (a site admin), their teams', or
 * nothing yet (no team). `null` before /me answers or where teams are off (a 404). */
export function seenTeams(me: Me | undefined): string | null {
  if (!me || me === EVERYONE) return null;
  if (me.is_superuser) return "You see every team's channels.";
  const names = me.teams.map((t) => t.name);
  if (names.length === 0) return "You belong to no team yet, so there are no channels to see.";
  if (names.length === 1) return `You see the channels of team ${names[0]}.`;
  return `You see the channels of teams ${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}.`;
}
