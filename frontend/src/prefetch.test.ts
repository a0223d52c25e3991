import { QueryClient } from "@tanstack/react-query";
import { afterEach, describe, expect, it, vi } from "vitest";

import { DEFAULT_PARAMS, pageQuery } from "./ops/fleet";
import { prefetchLanding } from "./prefetch";

describe("the landing page's prefetch", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("asks for the channels list's first page on the channels page only", async () => {
    const asked: string[] = [];
    vi.stubGlobal("fetch", (url: string) => {
      asked.push(url);
      return Promise.resolve(new Response(JSON.stringify({ count: 0, next: null, previous: null, results: [] })));
    });
    const client = new QueryClient();

    expect(prefetchLanding(client, "#/workers")).toBe(false);
    expect(prefetchLanding(client, "#/channels/orders")).toBe(false);
    expect(asked).toEqual([]);
    expect(prefetchLanding(client, "")).toBe(true);
    await vi.waitFor(() => expect(client.getQueryData(pageQuery(DEFAULT_PARAMS).queryKey)).toBeDefined());
    expect(asked).toEqual(["/api/v1/channels/?expand=status&limit=50&offset=0"]);
  });
});
