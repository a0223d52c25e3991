import { beforeEach, describe, expect, it, vi } from "vitest";

import { graphToSpec } from "../graph/spec";
import { useBuilder } from "./store";

const spec = () => {
  const { nodes, edges, errors, runtime } = useBuilder.getState();
  return graphToSpec(nodes, edges, errors, runtime);
};

const stages = {
  source: { type: "kafka", config: { bootstrap_servers: "k:9092", topics: ["orders"] } },
  transforms: [],
  sink: { type: "kafka", config: { bootstrap_servers: "k:9092", topic: "out" } },
};

describe("builder store", () => {
  beforeEach(() => useBuilder.getState().load(null));

  it("builds a chain from added and connected stages", () => {
    const s = useBuilder.getState();
    const a = s.addStage("source", "generator", { x: 0, y: 0 });
    const b = s.addStage("transform", "filter", { x: 200, y: 0 });
    const c = s.addStage("sink", "preview", { x: 400, y: 0 });
    s.connect(a, b);
    s.connect(b, c);
    s.connect(c, a); // a sink feeds nothing: ignored
    const steps = useBuilder.getState().past.length;
    s.connect(a, b); // drawn already: no change, no undo step
    expect(useBuilder.getState().past).toHaveLength(steps);
    s.setConfig(b, { pattern: { type: ["x"] } });
    const result = spec();
    expect(result.ok && result.spec).toEqual({
      source: { type: "generator", config: {} },
      transforms: [{ type: "filter", config: { pattern: { type: ["x"] } } }],
      sink: { type: "preview", config: {} },
    });
    expect(useBuilder.getState().dirty).toBe(true);
  });

  it("undoes and redoes", () => {
    const s = useBuilder.getState();
    const a = s.addStage("source", "generator", { x: 0, y: 0 });
    const b = s.addStage("sink", "preview", { x: 200, y: 0 });
    s.connect(a, b);
    expect(useBuilder.getState().edges).toHaveLength(1);
    s.undo();
    expect(useBuilder.getState().edges).toHaveLength(0);
    s.undo();
    expect(useBuilder.getState().nodes.map((n) => n.id)).toEqual([a]);
    s.redo();
    s.redo();
    expect(useBuilder.getState().edges).toHaveLength(1);
    expect(useBuilder.getState().future).toHaveLength(0);
  });

  it("groups quick config edits into one undo step", () => {
    vi.useFakeTimers();
    try {
      const s = useBuilder.getState();
      const a = s.addStage("source", "generator", { x: 0, y: 0 });
      vi.setSystemTime(10_000);
      s.setConfig(a, { rate: 1 });
      vi.setSystemTime(10_500);
      s.setConfig(a, { rate: 12 });
      vi.setSystemTime(20_000);
      s.setConfig(a, { rate: 120 });
      s.undo();
      expect(useBuilder.getState().nodes[0]!.data.config).toEqual({ rate: 12 });
      s.undo();
      expect(useBuilder.getState().nodes[0]!.data.config).toEqual({});
    } finally {
      vi.useRealTimers();
    }
  });

  it("deleting a stage keeps the chain and forgets its errors", () => {
    const s = useBuilder.getState();
    const a = s.addStage("source", "generator", { x: 0, y: 0 });
    const b = s.addStage("transform", "filter", { x: 200, y: 0 });
    const c = s.addStage("sink", "preview", { x: 400, y: 0 });
    s.connect(a, b);
    s.connect(b, c);
    s.setStageErrors(b, { pattern: ["field required"] });
    s.onNodesChange([{ type: "remove", id: b }]);
    const state = useBuilder.getState();
    expect(state.nodeErrors).toEqual({});
    expect(state.nodes.map((n) => n.id)).toEqual([a, c]);
    expect(spec().ok).toBe(true);
  });

  it("loads a channel and selects a node picked on the canvas", () => {
    useBuilder.getState().load({
      name: "x",
      description: "",
      spec: {
        source: { type: "generator", config: {} },
        transforms: [],
        sink: { type: "preview", config: {} },
      },
    });
    const state = useBuilder.getState();
    expect(state.exists).toBe(true);
    expect(state.past).toHaveLength(0);
    state.onNodesChange([{ type: "select", id: "n2", selected: true }]);
    expect(useBuilder.getState().selectedId).toBe("n2");
    // New stages get fresh ids.
    expect(useBuilder.getState().addStage("transform", "mask", { x: 0, y: 0 })).toBe("n3");
  });

  it("keeps a spec without runtime options without them (the server's defaults)", () => {
    useBuilder.getState().load({ name: "old", description: "", spec: stages });
    expect(useBuilder.getState().runtime).toBeNull();
    const result = spec();
    expect(result.ok && "runtime" in result.spec).toBe(false);
  });

  it("round-trips the runtime options and undoes a change of them", () => {
    const runtime = { isolation: "dedicated" as const, mode: "real-time" as const, interval_seconds: 5 };
    useBuilder.getState().load({ name: "rt", description: "", spec: { ...stages, runtime } });
    expect(spec()).toMatchObject({ ok: true, spec: { ...stages, runtime } });

    const s = useBuilder.getState();
    s.setRuntime({ ...runtime, mode: "available-now", interval_seconds: null });
    expect(useBuilder.getState().dirty).toBe(true);
    expect(spec()).toMatchObject({ ok: true, spec: { runtime: { mode: "available-now", interval_seconds: null } } });
    s.setRuntime({ ...runtime, mode: "available-now", interval_seconds: null }); // the same: no undo step
    expect(useBuilder.getState().past).toHaveLength(1);
    s.undo();
    expect(useBuilder.getState().runtime).toEqual(runtime);
    s.redo();
    expect(useBuilder.getState().runtime?.mode).toBe("available-now");
  });

  it("a second sink drawn from the end of the chain forks it into rules, in one undo step", () => {
    useBuilder.getState().load({
      name: "orders",
      description: "",
      spec: { ...stages, transforms: [{ type: "filter", config: { pattern: { type: ["order"] } } }] },
    });
    const s = useBuilder.getState();
    const second = s.addStage("sink", "files", { x: 480, y: 200 });
    s.connect("n2", second);
    const state = useBuilder.getState();
    const rules = state.nodes.filter((n) => n.data.kind === "rule");
    expect(rules.map((n) => [n.type, n.data.config])).toEqual([
      ["rule", { name: "default", enabled: true }],
      ["rule", { name: "rule-1", enabled: true }],
    ]);
    state.setConfig(rules[1]!.id, {
      name: "big",
      enabled: true,
      pattern: { data: { amount: [{ numeric: [">", 100] }] } },
    });
    const result = spec();
    expect(result.ok && result.spec.rules?.map((r) => [r.name, r.pattern, r.sinks.map((x) => x.type)])).toEqual([
      ["default", null, ["kafka"]],
      ["big", { data: { amount: [{ numeric: [">", 100] }] } }, ["files"]],
    ]);
    s.undo(); // the pattern
    s.undo(); // the fork: no rule nodes, the chain as it was
    const back = useBuilder.getState();
    expect(back.nodes.filter((n) => n.data.kind === "rule")).toHaveLength(0);
    expect(back.edges).toHaveLength(2);
  });

  it("adds a rule from the palette with a free name and forgets the bench's marks on a change", () => {
    const s = useBuilder.getState();
    expect(s.addStage("rule", "rule", { x: 0, y: 0 })).toBe("n1");
    const id = s.addStage("rule", "rule", { x: 0, y: 100 });
    expect(useBuilder.getState().nodes.find((n) => n.id === id)).toMatchObject({
      type: "rule",
      data: { kind: "rule", config: { name: "rule-2", enabled: true } },
    });
    s.setRuleMatches({ n1: true, [id]: false });
    s.setConfig(id, { name: "eu", enabled: false });
    expect(useBuilder.getState().ruleMatches).toBeNull();
  });

  it("re-targets a stage's output without a mouse", () => {
    const s = useBuilder.getState();
    const a = s.addStage("source", "generator", { x: 0, y: 0 });
    const b = s.addStage("sink", "kafka", { x: 200, y: 0 });
    const c = s.addStage("sink", "files", { x: 200, y: 100 });
    s.retarget(a, null, b);
    s.retarget(a, b, c);
    expect(useBuilder.getState().edges.map((e) => [e.source, e.target])).toEqual([[a, c]]);
    s.retarget(a, c, null);
    expect(useBuilder.getState().edges).toHaveLength(0);
  });
});
