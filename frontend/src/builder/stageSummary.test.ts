import { describe, expect, it } from "vitest";

import { stageSummary } from "./stageSummary";

describe("a stage's summary on its node", () => {
  it("names what tells stages of one type apart", () => {
    expect(stageSummary("kafka", { topic: "orders-eu" })).toBe("orders-eu");
    expect(stageSummary("kafka", { topics: ["a", "b"] })).toBe("a, b");
    expect(stageSummary("kafka", { topic_pattern: "orders-.*" })).toBe("orders-.*");
    expect(stageSummary("http", { url: "https://api.example.com/events" })).toBe("api.example.com");
    expect(stageSummary("jdbc", { table: "orders" })).toBe("orders");
    expect(stageSummary("files", { path: "/data/out" })).toBe("/data/out");
  });

  it("is empty for what has none, and short", () => {
    expect(stageSummary("filter", { pattern: {} })).toBe("");
    expect(stageSummary("kafka", {})).toBe("");
    expect(stageSummary("http", { url: "not a url" })).toBe("");
    expect(stageSummary("kafka", { topic: "x".repeat(60) })).toHaveLength(40);
  });
});
