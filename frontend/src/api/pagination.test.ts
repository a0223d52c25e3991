import { afterEach, describe, expect, it, vi } from "vitest";

import { listItems, PAGE_LIMIT, withQuery } from "./pagination";

/**
 * A limit/offset list of `total` items served as DRF does, capping `limit` at `maxLimit`;
 * `count` is what the answer claims (the total unless told). Returns the URLs it was asked.
 */
function serveList(total: number, maxLimit = Infinity, count = total): string[] {
  const asked: string[] = [];
  const items = Array.from({ length: total }, (_, i) => ({ id: i }));
  vi.stubGlobal("fetch", async (url: string) => {
    asked.push(url);
    if (asked.length > 20) throw new Error("the list is read again and again");
    const params = new URL(url, "http://console.test").searchParams;
    const limit = Math.min(Number(params.get("limit") ?? 50), maxLimit);
    const offset = Number(params.get("offset") ?? 0);
    const body = { count, next: null, previous: null, results: items.slice(offset, offset + limit) };
    return new Response(JSON.stringify(body), { status: 200 });
  });
  return asked;
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("withQuery", () => {
  it("adds a query string, or to the one the path has", () => {
    expect(withQuery("plugins/", { limit: 500, offset: 0 })).toBe("plugins/?limit=500&offset=0");
    expect(withQuery("channels/?expand=status", { limit: 5 })).toBe("channels/?expand=status&limit=5");
  });

  it("replaces a parameter the path already sets", () => {
    expect(withQuery("workers/?limit=7", { limit: 9 })).toBe("workers/?limit=9");
  });
});

describe("listItems", () => {
  it("reads a list that fits in a page with one request, as the hooks always did", async () => {
    const asked = serveList(3);

    expect(await listItems("channels/?expand=status")).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
    expect(asked).toEqual([`/api/v1/channels/?expand=status&limit=${PAGE_LIMIT}&offset=0`]);
  });

  it("reads every page of a list longer than a page", async () => {
    const asked = serveList(PAGE_LIMIT + 2);

    const items = await listItems<{ id: number }>("channels/");

    expect(items.map((item) => item.id)).toEqual(Array.from({ length: PAGE_LIMIT + 2 }, (_, i) => i));
    expect(asked).toEqual([
      `/api/v1/channels/?limit=${PAGE_LIMIT}&offset=0`,
      `/api/v1/channels/?limit=${PAGE_LIMIT}&offset=${PAGE_LIMIT}`,
    ]);
  });

  it("still reads the whole list when the server serves fewer items per page than asked", async () => {
    const asked = serveList(5, 2);

    expect(await listItems("workers/")).toHaveLength(5);
    expect(asked.map((url) => new URL(url, "http://x").searchParams.get("offset"))).toEqual(["0", "2", "4"]);
  });

  it("reads only the first `max` items", async () => {
    const asked = serveList(10);

    expect(await listItems("channels/orders/lifecycle/", 3)).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
    expect(asked).toEqual(["/api/v1/channels/orders/lifecycle/?limit=3&offset=0"]);
  });

  it("stops at an empty page even when the count promised more (items deleted meanwhile)", async () => {
    const asked = serveList(2, Infinity, 4);

    expect(await listItems("channels/")).toHaveLength(2);
    expect(asked).toHaveLength(2);
  });

  it("reads an empty list with one request", async () => {
    const asked = serveList(0);

    expect(await listItems("plugins/")).toEqual([]);
    expect(asked).toHaveLength(1);
  });
});
