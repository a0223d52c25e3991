import { describe, expect, it } from "vitest";

import type { Me } from "../api/types";
import { EVERYONE } from "../api/hooks";
import { permissionIn, permissionOf, seenTeams } from "./permissions";

const none = { view: true, operate: false, operate_workers: false, edit: false };
const all = { view: true, operate: true, operate_workers: true, edit: true };
const me: Me = {
  username: "alice",
  roles: ["viewer", "operator"],
  is_superuser: false,
  can: { view: true, operate: true, operate_workers: true, edit: false },
  teams: [
    { name: "pay", roles: ["operator"], can: { ...none, operate: true, operate_workers: true } },
    { name: "ads", roles: ["viewer"], can: none },
  ],
};

describe("what a control allows", () => {
  it("follows the user's roles in the team of the channel on screen", () => {
    expect(permissionOf(me, "pay", "operate")).toEqual({ allowed: true, reason: "" });
    expect(permissionOf(me, "ads", "operate")).toEqual({
      allowed: false,
      reason: "Needs the operator role in team ads (start, stop, pause, resume, restart, offsets).",
    });
  });

  it("follows any team's roles where no channel is on screen", () => {
    expect(permissionOf(me, null, "operate").allowed).toBe(true);
    expect(permissionOf(me, null, "edit")).toEqual({
      allowed: false,
      reason: "Needs the editor role (create, save and delete channels).",
    });
  });

  it("lets a site admin do everything in every team", () => {
    const root: Me = { ...me, is_superuser: true, can: all, teams: [] };
    expect(permissionOf(root, "ads", "edit").allowed).toBe(true);
  });
});

describe("which teams' channels the user sees", () => {
  it("names the user's teams, or says a site admin sees all", () => {
    expect(seenTeams(me)).toBe("You see the channels of teams pay and ads.");
    expect(seenTeams({ ...me, teams: me.teams.slice(0, 1) })).toBe("You see the channels of team pay.");
    expect(seenTeams({ ...me, teams: [...me.teams, { name: "ops", roles: ["viewer"], can: none }] })).toBe(
      "You see the channels of teams pay, ads and ops.",
    );
    expect(seenTeams({ ...me, is_superuser: true })).toBe("You see every team's channels.");
  });

  it("says so when the user is in no team, and says nothing before /me answers", () => {
    expect(seenTeams({ ...me, teams: [] })).toBe("You belong to no team yet, so there are no channels to see.");
    expect(seenTeams(undefined)).toBeNull();
    expect(seenTeams(EVERYONE)).toBeNull();
  });
});

describe("what a bulk action allows on channels of several teams", () => {
  it("is allowed when the user may in any of the selection's teams (the server answers each)", () => {
    expect(permissionIn(me, ["pay", "ads"], "operate")).toEqual({ allowed: true, reason: "" });
    expect(permissionIn(me, ["ads"], "operate").reason).toContain("in team ads (");
  });

  it("names every team of the selection when none allows it", () => {
    expect(permissionIn(me, ["pay", "ads"], "edit")).toEqual({
      allowed: false,
      reason: "Needs the editor role in teams pay and ads (create, save and delete channels).",
    });
  });

  it("asks any of the user's teams for 'all matching' or an empty selection", () => {
    expect(permissionIn(me, null, "operate")).toEqual(permissionOf(me, null, "operate"));
    expect(permissionIn(me, [], "edit")).toEqual(permissionOf(me, null, "edit"));
  });
});
