import { describe, expect, it } from "vitest";

import { healthRank } from "./HealthBadge";

const health = (level: string, score: number) =>
  ({ level, score, explanation: "", reasons: [] }) as unknown as Parameters<typeof healthRank>[0];

describe("healthRank", () => {
  it("sorts critical before warning before ok before idle, then by score, unknown last", () => {
    const fleet = [
      ["idle", health("idle", 100)],
      ["ok", health("ok", 100)],
      ["bad", health("critical", 40)],
      ["worse", health("critical", 0)],
      ["warn", health("warning", 85)],
      ["none", undefined],
    ] as const;
    const order = [...fleet].sort((a, b) => healthRank(a[1]) - healthRank(b[1])).map(([name]) => name);
    expect(order).toEqual(["worse", "bad", "warn", "ok", "idle", "none"]);
  });
});
