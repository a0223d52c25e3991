import { beforeEach, describe, expect, it } from "vitest";

import type { ChannelSpec } from "../api/types";
import { branchTargets, graphToSpec } from "../graph/spec";
import { useBuilder } from "./store";

/** source → filter → sink, as the builder makes them. */
function chain() {
  const s = useBuilder.getState();
  const a = s.addStage("source", "generator", { x: 0, y: 0 });
  const b = s.addStage("transform", "filter", { x: 200, y: 0 });
  const c = s.addStage("sink", "preview", { x: 400, y: 0 });
  s.connect(a, b);
  s.connect(b, c);
  return { a, b, c };
}

const pairs = () =>
  useBuilder
    .getState()
    .edges.map((e) => `${e.source}>${e.target}`)
    .sort();

describe("deleting a stage", () => {
  beforeEach(() => useBuilder.getState().load(null));

  it("does the same from the Delete key (nodes and their edges at once) as from the button", () => {
    const { a, b, c } = chain();
    const edgeIds = useBuilder.getState().edges.map((e) => e.id);
    // What React Flow hands over for Delete on a selected node: the node and its edges.
    useBuilder.getState().deleteElements([b], edgeIds);
    const byKey = { nodes: useBuilder.getState().nodes.map((n) => n.id), edges: pairs() };

    useBuilder.getState().load(null);
    const again = chain();
    useBuilder.getState().deleteNode(again.b);
    expect({ nodes: useBuilder.getState().nodes.map((n) => n.id), edges: pairs() }).toEqual(byKey);
    expect(byKey).toEqual({ nodes: [a, c], edges: [`${a}>${c}`] });
  });

  it("is one undo step", () => {
    const { a, b, c } = chain();
    const before = pairs();
    useBuilder.getState().deleteElements(
      [b],
      useBuilder.getState().edges.map((e) => e.id),
    );
    useBuilder.getState().undo();
    expect(useBuilder.getState().nodes.map((n) => n.id)).toEqual([a, b, c]);
    expect(pairs()).toEqual(before);
  });

  it("deletes a selected edge alone", () => {
    const { a, b } = chain();
    const edge = useBuilder.getState().edges.find((e) => e.source === a)!;
    useBuilder.getState().deleteElements([], [edge.id]);
    expect(pairs()).toEqual([`${b}>n3`]);
    useBuilder.getState().undo();
    expect(pairs()).toHaveLength(2);
  });
});

describe("importing a channel", () => {
  beforeEach(() => useBuilder.getState().load(null));

  const imported: { name: string; description: string; spec: ChannelSpec } = {
    name: "imported",
    description: "from a file",
    spec: {
      source: { type: "generator", config: {} },
      transforms: [],
      sink: { type: "preview", config: {} },
    } as unknown as ChannelSpec,
  };

  it("replaces canvas, name and description in one step that undo takes back, and redo again", () => {
    chain();
    useBuilder.getState().setMeta({ name: "mine", description: "typed" });
    useBuilder.getState().importChannel(imported, false);
    expect(useBuilder.getState()).toMatchObject({ name: "imported", description: "from a file" });
    expect(useBuilder.getState().nodes).toHaveLength(2);

    useBuilder.getState().undo();
    expect(useBuilder.getState()).toMatchObject({ name: "mine", description: "typed" });
    expect(useBuilder.getState().nodes).toHaveLength(3);

    useBuilder.getState().redo();
    expect(useBuilder.getState()).toMatchObject({ name: "imported", description: "from a file", exists: false });
    expect(useBuilder.getState().nodes).toHaveLength(2);
  });

  it("leaves a name typed after another step alone when that step is undone", () => {
    const s = useBuilder.getState();
    s.addStage("source", "generator", { x: 0, y: 0 });
    s.setMeta({ name: "typed-later" });
    useBuilder.getState().undo();
    expect(useBuilder.getState().name).toBe("typed-later");
  });
});

describe("connecting a stage that already feeds one", () => {
  beforeEach(() => useBuilder.getState().load(null));

  /** source → EU filter → sink, as loaded from a saved linear channel. */
  const euChannel = () =>
    useBuilder.getState().load({
      name: "orders",
      description: "",
      spec: {
        source: { type: "generator", config: {} },
        transforms: [{ type: "filter", config: { pattern: { data: { region: [{ prefix: "eu-" }] } } } }],
        sink: { type: "preview", config: {} },
      },
    }); // n1 → n2 (filter) → n3 (sink)

  it("forks when a new filter is drawn from the source: the EU link stays, each branch gets a rule", () => {
    euChannel();
    const s = useBuilder.getState();
    const usFilter = s.addStage("transform", "filter", { x: 240, y: 200 });
    const usSink = s.addStage("sink", "files", { x: 480, y: 200 });
    s.connect("n1", usFilter);
    s.connect(usFilter, usSink);
    const state = useBuilder.getState();
    const rules = state.nodes.filter((n) => n.data.kind === "rule");
    expect(rules.map((n) => n.data.config.name)).toEqual(["default", "rule-1"]);
    // Every stage is still connected: source → rule → filter → sink, twice.
    expect(pairs()).toEqual(
      [
        `n1>${rules[0]!.id}`,
        `${rules[0]!.id}>n2`,
        "n2>n3",
        `n1>${rules[1]!.id}`,
        `${rules[1]!.id}>${usFilter}`,
        `${usFilter}>${usSink}`,
      ].sort(),
    );
    const result = graphToSpec(state.nodes, state.edges);
    expect(result.ok && result.spec.rules?.map((r) => [r.name, r.transforms?.length, r.sinks[0]!.type])).toEqual([
      ["default", 1, "preview"],
      ["rule-1", 1, "files"],
    ]);
  });

  it("forks the same way when the new filter already leads to its own sink", () => {
    euChannel();
    const s = useBuilder.getState();
    const usFilter = s.addStage("transform", "filter", { x: 240, y: 200 });
    const usSink = s.addStage("sink", "files", { x: 480, y: 200 });
    s.connect(usFilter, usSink);
    s.connect("n1", usFilter);
    expect(useBuilder.getState().edges.some((e) => e.target === "n2")).toBe(true);
    expect(useBuilder.getState().nodes.filter((n) => n.data.kind === "rule")).toHaveLength(2);
  });

  it("“Add a branch to” forks and “Feeds into” replaces", () => {
    euChannel();
    const s = useBuilder.getState();
    const usFilter = s.addStage("transform", "filter", { x: 240, y: 200 });
    // NextStage's "Add a branch to" offers only stages a link would fork to, and calls connect.
    expect(branchTargets(useBuilder.getState().nodes, useBuilder.getState().edges, "n1")).toEqual([usFilter]);
    s.connect("n1", usFilter);
    expect(useBuilder.getState().nodes.filter((n) => n.data.kind === "rule")).toHaveLength(2);
    s.undo();
    // "Feeds into" re-points the one link: the EU filter is left unconnected.
    s.retarget("n1", "n2", usFilter);
    expect(pairs()).toEqual([`n1>${usFilter}`, "n2>n3"]);
  });
});

describe("a channel's team", () => {
  beforeEach(() => useBuilder.getState().load(null));

  it("is a new channel's choice and a saved channel's own, fixed", () => {
    useBuilder.getState().setMeta({ team: "payments" });
    expect(useBuilder.getState()).toMatchObject({ team: "payments", exists: false });
    useBuilder.getState().load({
      name: "orders",
      description: "",
      team: "ads",
      spec: { source: { type: "generator", config: {} }, transforms: [], sink: { type: "preview", config: {} } },
    });
    useBuilder.getState().setMeta({ team: "payments", description: "typed" });
    expect(useBuilder.getState()).toMatchObject({ team: "ads", description: "typed", exists: true });
  });
});

describe("a saved channel's name", () => {
  beforeEach(() => useBuilder.getState().load(null));

  it("is fixed: save is a PUT to it, so a new name is not taken", () => {
    useBuilder.getState().load({
      name: "orders",
      description: "",
      spec: { source: { type: "generator", config: {} }, transforms: [], sink: { type: "preview", config: {} } },
    });
    useBuilder.getState().setMeta({ name: "orders-copy", description: "typed" });
    expect(useBuilder.getState()).toMatchObject({ name: "orders", description: "typed", exists: true });
  });

  it("is fixed after an import that replaces a channel, free after an import as a copy", () => {
    const spec = {
      source: { type: "generator", config: {} },
      transforms: [],
      sink: { type: "preview", config: {} },
    } as unknown as ChannelSpec;
    useBuilder.getState().importChannel({ name: "orders", description: "", spec }, true);
    useBuilder.getState().setMeta({ name: "orders-2" });
    expect(useBuilder.getState().name).toBe("orders");
    useBuilder.getState().importChannel({ name: "orders-copy", description: "", spec }, false);
    useBuilder.getState().setMeta({ name: "orders-eu" });
    expect(useBuilder.getState()).toMatchObject({ name: "orders-eu", exists: false });
  });
});
