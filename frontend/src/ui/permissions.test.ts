import { describe, expect, it } from "vitest";

import type { Me } from "../api/types";
import { permissionOf } from "./permissions";

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
