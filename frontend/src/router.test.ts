import { describe, expect, it } from "vitest";

import { href, parseRoute } from "./router";

describe("the schemas' routes", () => {
  it("name a subject in its team, or a subject alone", () => {
    expect(parseRoute("#/schemas/payments/orders-value")).toEqual({
      page: "schemas",
      subject: "orders-value",
      team: "payments",
    });
    expect(parseRoute("#/schemas/orders-value")).toEqual({ page: "schemas", subject: "orders-value" });
    expect(href({ page: "schemas", subject: "a b", team: "payments" })).toBe("#/schemas/payments/a%20b");
    expect(href({ page: "schemas", subject: "orders-value", team: null })).toBe("#/schemas/orders-value");
    expect(parseRoute(href({ page: "schemas", subject: "x/y", team: "t" }))).toEqual({
      page: "schemas",
      subject: "x/y",
      team: "t",
    });
  });
});
