import { afterEach, describe, expect, it, vi } from "vitest";

import { post } from "../api/client";
import type { Team, TeamQuotas } from "../api/types";
import { quotaUse, reachedQuotas, teamQuotaText } from "./quotas";

const none = { limit: null, used: null };

function quotas(patch: Partial<TeamQuotas>): TeamQuotas {
  return {
    max_channels: { limit: null, used: 12 },
    max_running_channels: { limit: null, used: 3 },
    max_realtime_cores: { limit: null, used: 0 },
    max_driver_cores: none,
    max_driver_memory_mib: none,
    ...patch,
  };
}

function team(patch: Partial<TeamQuotas>): Team {
  return { name: "payments", description: "", roles: ["viewer"], quotas: quotas(patch), reach: {} };
}

describe("team quotas", () => {
  it("words each quota set against its use", () => {
    const payments = team({
      max_channels: { limit: 20, used: 12 },
      max_running_channels: { limit: 5, used: 3 },
    });
    expect(teamQuotaText(payments)).toBe("payments: 12 of 20 channels · 3 of 5 running");
  });

  it("says nothing of a team without quotas, nor of the runtime's driver quotas", () => {
    expect(teamQuotaText(team({}))).toBe("");
    expect(quotaUse(quotas({ max_driver_cores: { limit: 4, used: null } }))).toBe("");
  });

  it("names real-time cores", () => {
    expect(quotaUse(quotas({ max_realtime_cores: { limit: 8, used: 6 } }))).toBe("6 of 8 real-time cores");
  });

  it("tells which quotas are reached", () => {
    const full = quotas({
      max_channels: { limit: 12, used: 12 },
      max_running_channels: { limit: 5, used: 3 },
    });
    expect(reachedQuotas(full)).toEqual(["max_channels"]);
    expect(reachedQuotas(quotas({}))).toEqual([]);
  });
});

describe("a start refused for a quota", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("says the quota, as the server words it", async () => {
    const body = {
      detail: "Team payments has reached its quota of 5 running channels (max_running_channels).",
      quota: "max_running_channels",
      limit: 5,
      used: 5,
      team: "payments",
    };
    vi.stubGlobal("document", { cookie: "csrftoken=t" });
    vi.stubGlobal(
      "fetch",
      vi.fn(() => Promise.resolve(new Response(JSON.stringify(body), { status: 429 }))),
    );

    await expect(post("channels/orders/start")).rejects.toMatchObject({
      status: 429,
      message: body.detail,
      body,
    });
  });
});
