import { describe, expect, it } from "vitest";
import { curlExample, parseRateLimit } from "./ingest";

describe("the HTTP ingestion panel", () => {
  it("reads the rate limit: empty is the default, else a whole number of at least 1", () => {
    expect(parseRateLimit("")).toEqual({ ok: true, limit: null });
    expect(parseRateLimit(" 250 ")).toEqual({ ok: true, limit: 250 });
    expect(parseRateLimit("0")).toMatchObject({ ok: false });
    expect(parseRateLimit("1.5")).toMatchObject({ ok: false });
    expect(parseRateLimit("fast")).toMatchObject({ ok: false });
  });

  it("builds a curl command with the bearer token and the channel's events URL", () => {
    const command = curlExample("http://127.0.0.1:8000", "web orders", "slk_abc");
    expect(command).toContain("http://127.0.0.1:8000/api/v1/channels/web%20orders/events");
    expect(command).toContain('-H "Authorization: Bearer slk_abc"');
    expect(command).toContain("application/cloudevents+json");
  });
});
