import { describe, expect, it } from "vitest";

import type { Revision } from "../api/types";
import { defaultPair, diffSpecs, prettyJson, summarize, withContext } from "./revisions";

const spec = (amount: number, extra: Record<string, unknown> = {}) => ({
  source: { type: "generator", config: { rate: 5 } },
  transforms: [{ type: "filter", config: { pattern: { data: { amount: [{ numeric: [">", amount] }] } } } }],
  sink: { type: "preview", config: {} },
  ...extra,
});

const revision = (number: number): Revision => ({
  number,
  created_at: "2026-11-21T10:00:00Z",
  created_by: "alice",
  spec: spec(number) as unknown as Revision["spec"],
});

describe("prettyJson", () => {
  it("sorts keys at every level so key order never shows as a change", () => {
    expect(prettyJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: 3 } })).toBe(
      prettyJson({ a: { c: 3, d: [{ y: 2, z: 1 }] }, b: 1 }),
    );
    expect(prettyJson({ b: 1, a: 2 }).split("\n")[1]).toBe('  "a": 2,');
  });
});

describe("diffSpecs", () => {
  it("reports nothing changed for equal specs", () => {
    const lines = diffSpecs(spec(100), spec(100));
    expect(summarize(lines)).toEqual({ added: 0, removed: 0 });
    expect(lines.every((l) => l.oldNumber === l.newNumber)).toBe(true);
  });

  it("marks the changed line removed then added, with line numbers on each side", () => {
    const lines = diffSpecs(spec(100), spec(250));
    expect(summarize(lines)).toEqual({ added: 1, removed: 1 });
    const removed = lines.find((l) => l.kind === "removed")!;
    const added = lines.find((l) => l.kind === "added")!;
    expect(removed.text.trim()).toBe("100");
    expect(added.text.trim()).toBe("250");
    expect(removed.newNumber).toBeNull();
    expect(added.oldNumber).toBeNull();
    expect(removed.oldNumber).toBe(added.newNumber);
  });

  it("counts a new key as added lines only", () => {
    const lines = diffSpecs(spec(100), spec(100, { errors: { tolerance: "all" } }));
    const { added, removed } = summarize(lines);
    expect(added).toBeGreaterThan(0);
    expect(lines.filter((l) => l.kind === "added").map((l) => l.text.trim())).toContain('"tolerance": "all"');
    expect(removed).toBeLessThanOrEqual(1); // at most the line that gains a trailing comma
  });
});

describe("withContext", () => {
  it("folds long unchanged runs around the changes", () => {
    const lines = diffSpecs(spec(100), spec(250));
    const shown = withContext(lines, 1);
    const folds = shown.filter((l) => "folded" in l) as { folded: number }[];
    const visible = shown.filter((l) => !("folded" in l));
    expect(visible).toHaveLength(4); // one line of context each side of the two changed lines
    expect(folds.reduce((n, f) => n + f.folded, 0) + visible.length).toBe(lines.length);
  });

  it("folds everything when nothing changed", () => {
    const lines = diffSpecs(spec(1), spec(1));
    expect(withContext(lines)).toEqual([{ folded: lines.length }]);
  });
});

describe("defaultPair", () => {
  it("compares the running revision with the latest when they differ", () => {
    expect(defaultPair([revision(3), revision(2), revision(1)], 1)).toEqual([1, 3]);
  });

  it("else the latest with the one before", () => {
    expect(defaultPair([revision(3), revision(2), revision(1)], 3)).toEqual([2, 3]);
    expect(defaultPair([revision(2), revision(1)], null)).toEqual([1, 2]);
  });

  it("has nothing to compare with one revision", () => {
    expect(defaultPair([revision(1)], 1)).toBeNull();
    expect(defaultPair([], null)).toBeNull();
  });
});
