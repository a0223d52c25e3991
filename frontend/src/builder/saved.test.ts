import { describe, expect, it } from "vitest";

import type { Channel } from "../api/types";
import { savedMessage } from "./saved";

const channel = (over: Partial<Channel>) =>
  ({ name: "orders", revision: 2, deployed_revision: 1, drift: true, ...over }) as Channel;

describe("the save message", () => {
  it("says the revision that stays deployed until the saved one is", () => {
    expect(savedMessage(channel({}))).toBe(
      "Saved revision 2 of orders. Revision 1 is deployed until you deploy this one (the channel page's Deploy).",
    );
  });

  it("is short when nothing else runs", () => {
    expect(savedMessage(channel({ drift: false, deployed_revision: 2 }))).toBe("Saved revision 2 of orders.");
    expect(savedMessage(channel({ revision: 1, drift: false, deployed_revision: null }))).toBe(
      "Saved revision 1 of orders.",
    );
  });
});
