import { afterEach, describe, expect, it, vi } from "vitest";

import { validateStage } from "./hooks";

/** Serves POST …/validate as the server does: 200 when asked with invalid_status=200, else
 * 400 for a config not valid. Returns the URLs asked. */
function serveVerdict(valid: boolean): string[] {
  const asked: string[] = [];
  vi.stubGlobal("document", { cookie: "csrftoken=t" });
  vi.stubGlobal("fetch", async (url: string) => {
    asked.push(url);
    const answer200 = new URL(url, "http://console.test").searchParams.get("invalid_status") === "200";
    const body = valid
      ? { valid: true, config: {} }
      : { valid: false, errors: { "config.topics": ["field required"] } };
    return new Response(JSON.stringify(body), { status: valid || answer200 ? 200 : 400 });
  });
  return asked;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("validateStage", () => {
  it("asks for a not-valid verdict as a 200, so typing logs no failed request", async () => {
    const asked = serveVerdict(false);
    const answer = await validateStage("source", "kafka", { topics: [] });
    expect(asked).toEqual(["/api/v1/plugins/source/kafka/validate?invalid_status=200"]);
    expect(answer).toEqual({ valid: false, errors: { "config.topics": ["field required"] } });
  });

  it("asks within the channel's team's reach when it has a team", async () => {
    const asked = serveVerdict(true);
    await validateStage("sink", "kafka", { topic: "b.out" }, "pay ments");
    expect(asked).toEqual(["/api/v1/plugins/sink/kafka/validate?invalid_status=200&team=pay%20ments"]);
  });

  it("reads a valid verdict as it comes", async () => {
    serveVerdict(true);
    expect(await validateStage("transform", "filter", {})).toEqual({ valid: true, config: {} });
  });
});
