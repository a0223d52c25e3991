import { describe, expect, it } from "vitest";

import { checkRows, describeChange, keyError, rowsOf, serverErrorsByRow, valueError } from "./labels";

describe("channel labels", () => {
  it("follows the server's key and value rules (console/labels.py)", () => {
    expect(keyError("team")).toBeNull();
    expect(keyError("app.kubernetes.io/part-of")).toBeNull();
    expect(keyError("bad key")).toMatch(/^A label key's name must be/);
    expect(keyError("-team")).toMatch(/^A label key's name must be/);
    expect(keyError("Example.COM/team")).toMatch(/^The prefix before '\/' must be a DNS subdomain/);
    expect(keyError("/team")).toMatch(/^The prefix/);
    expect(keyError("x".repeat(64))).not.toBeNull();
    expect(valueError("")).toBeNull();
    expect(valueError("payments")).toBeNull();
    expect(valueError("has space")).toMatch(/^A label value must be empty or/);
    expect(valueError("x".repeat(64))).not.toBeNull();
  });

  it("turns rows into labels, each problem on its row, blank rows left out", () => {
    const rows = [
      { key: "team", value: "payments" },
      { key: "", value: "" },
      { key: "tier", value: "" },
      { key: "team", value: "search" },
      { key: "", value: "orphan" },
      { key: "bad key", value: "x" },
    ];
    const checked = checkRows(rows);
    expect(checked.labels).toEqual({ team: "payments", tier: "" });
    expect(Object.keys(checked.errors).sort()).toEqual(["3", "4", "5"]);
    expect(checked.errors["3"]).toEqual(["The key team is already used above: a key has one value."]);
    expect(checked.errors["4"]).toEqual(["A label needs a key."]);
    const many = Array.from({ length: 65 }, (_, i) => ({ key: `k${i}`, value: "v" }));
    expect(checkRows(many).errors[""]).toEqual(["At most 64 labels (got 65)."]);
  });

  it("puts the server's 400 paths back on their rows", () => {
    const rows = [
      { key: "team", value: "ok" },
      { key: "zone", value: "bad value" },
    ];
    expect(
      serverErrorsByRow(rows, {
        "labels.zone": ["A label value must be empty or …"],
        labels: ["At most 64 labels (got 65)."],
        "labels.gone": ["x"],
        description: ["not mine"],
      }),
    ).toEqual({ "1": ["A label value must be empty or …"], "": ["At most 64 labels (got 65).", "gone: x"] });
  });

  it("says what saving will change", () => {
    const before = { team: "payments", tier: "", env: "dev" };
    const after = { team: "payments", env: "prod", owner: "alice" };
    expect(describeChange(before, after)).toBe("Saving adds owner=alice; removes tier; changes env from dev to prod.");
    expect(describeChange(before, before)).toBe("");
    expect(describeChange({}, { tier: "" })).toBe("Saving adds tier.");
    expect(rowsOf({ b: "2", a: "1" })).toEqual([
      { key: "a", value: "1" },
      { key: "b", value: "2" },
    ]);
  });
});
