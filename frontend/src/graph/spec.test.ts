import { describe, expect, it } from "vitest";

import type { ChannelSpec } from "../api/types";
import {
  SECRET_MARKER,
  alignErrorPath,
  canConnect,
  checkGraph,
  connect,
  errorsByNode,
  graphToSpec,
  parseErrorPath,
  removeNode,
  specToGraph,
  toFormErrors,
  type GraphNode,
} from "./spec";

const spec: ChannelSpec = {
  source: { type: "generator", config: { rate: 5 } },
  transforms: [
    { type: "filter", config: { pattern: { data: { region: [{ prefix: "eu-" }] } } } },
    { type: "mask", config: { fields: ["data.customer"] } },
  ],
  sink: { type: "preview", config: { max_events: 50 } },
};

const node = (id: string, kind: GraphNode["data"]["kind"], type = kind as string): GraphNode => ({
  id,
  position: { x: 0, y: 0 },
  data: { kind, type, config: {} },
});

describe("specToGraph / graphToSpec", () => {
  it("round-trips a spec", () => {
    const { nodes, edges } = specToGraph(spec);
    expect(nodes.map((n) => n.data.type)).toEqual(["generator", "filter", "mask", "preview"]);
    expect(edges).toHaveLength(3);
    const back = graphToSpec(nodes, edges);
    expect(back).toEqual({
      ok: true,
      spec,
      stages: { source: "n1", "transforms[0]": "n2", "transforms[1]": "n3", sink: "n4" },
    });
  });

  it("keeps the runtime options, and leaves them out when there are none", () => {
    const { nodes, edges } = specToGraph(spec);
    const runtime = { isolation: "dedicated" as const, mode: "available-now" as const, interval_seconds: null };
    const back = graphToSpec(nodes, edges, null, runtime);
    expect(back.ok && back.spec.runtime).toEqual(runtime);
    const plain = graphToSpec(nodes, edges, null, null);
    expect(plain.ok && "runtime" in plain.spec).toBe(false);
  });

  it("puts the errors a mode causes on the stages it cannot run", () => {
    const grouped = errorsByNode(
      {
        "spec.source.type": ["a generator source has no end for available-now to reach"],
        "spec.transforms[0].type": ["real-time mode runs stateless Kafka to Kafka channels"],
        "spec.runtime.mode": ["unknown"],
        "spec.errors.dead_letter": ["no dead letters in real-time mode"],
      },
      { source: "a", "transforms[0]": "b", sink: "c" },
    );
    expect(grouped.nodes).toEqual({
      a: { "": ["a generator source has no end for available-now to reach"] },
      b: { "": ["real-time mode runs stateless Kafka to Kafka channels"] },
    });
    expect(Object.keys(grouped.other)).toEqual(["spec.runtime.mode", "spec.errors.dead_letter"]);
  });

  it("keeps the error policy", () => {
    const { nodes, edges } = specToGraph(spec);
    const errors = { tolerance: "all" as const, dead_letter: null, log: true };
    const back = graphToSpec(nodes, edges, errors);
    expect(back.ok && back.spec.errors).toEqual(errors);
  });

  it("reads the chain in edge order, not node order", () => {
    const nodes = [node("s", "sink", "preview"), node("b", "transform", "mask"), node("a", "source", "generator")];
    const edges = [
      { id: "1", source: "b", target: "s" },
      { id: "2", source: "a", target: "b" },
    ];
    const back = graphToSpec(nodes, edges);
    expect(back.ok && back.spec.transforms.map((t) => t.type)).toEqual(["mask"]);
    expect(back.ok && back.stages).toEqual({ source: "a", "transforms[0]": "b", sink: "s" });
  });

  it("never prefills secrets", () => {
    const withSecret: ChannelSpec = {
      ...spec,
      sink: {
        type: "jdbc",
        config: { url: "sqlite:///x.db", password: SECRET_MARKER, nested: { token: SECRET_MARKER, keep: 1 } },
      },
    };
    const { nodes } = specToGraph(withSecret);
    expect(nodes[3]!.data.config).toEqual({ url: "sqlite:///x.db", nested: { keep: 1 } });
  });
});

describe("checkGraph", () => {
  it("asks for a source and a sink", () => {
    expect(checkGraph([], []).map((p) => p.message)).toEqual(["Add a source.", "Add a sink."]);
  });

  it("refuses two sources", () => {
    const problems = checkGraph([node("a", "source"), node("b", "source"), node("c", "sink")], []);
    expect(problems[0]!.nodeIds).toEqual(["a", "b"]);
  });

  it("names the end of a broken chain and the loose stages", () => {
    const nodes = [node("a", "source"), node("t", "transform"), node("z", "sink")];
    expect(checkGraph(nodes, [{ id: "1", source: "a", target: "t" }])).toEqual([
      { message: "Connect the chain from the source through to the sink.", nodeIds: ["t"] },
    ]);
    expect(checkGraph(nodes, [{ id: "1", source: "a", target: "z" }])).toEqual([
      { message: "Some stages are not connected to the chain.", nodeIds: ["t"] },
    ]);
  });

  it("names the end of a branch that reaches no sink", () => {
    const nodes = [node("a", "source"), node("t", "transform"), node("z", "sink")];
    const edges = [
      { id: "1", source: "a", target: "t" },
      { id: "2", source: "a", target: "z" },
    ];
    expect(checkGraph(nodes, edges)).toEqual([{ message: "Connect each branch through to a sink.", nodeIds: ["t"] }]);
  });

  it("refuses a stage with two inputs and a loop", () => {
    const nodes = [node("a", "source"), node("t", "transform"), node("u", "transform"), node("z", "sink")];
    const twoInputs = [
      { id: "1", source: "a", target: "t" },
      { id: "2", source: "a", target: "u" },
      { id: "3", source: "t", target: "z" },
      { id: "4", source: "u", target: "z" },
    ];
    expect(checkGraph(nodes, twoInputs)[0]).toEqual({
      message: "A stage reads from exactly one stage.",
      nodeIds: ["z"],
    });
    const loop = [
      { id: "1", source: "a", target: "z" },
      { id: "2", source: "t", target: "u" },
      { id: "3", source: "u", target: "t" },
    ];
    expect(checkGraph(nodes, loop)).toEqual([
      { message: "Some stages are not connected to the chain.", nodeIds: ["t", "u"] },
    ]);
  });
});

describe("editing the chain", () => {
  it("re-connecting inside the chain reorders transforms, in one gesture, either way", () => {
    const { nodes, edges } = specToGraph(spec); // n1 → n2 (filter) → n3 (mask) → n4
    // The source drawn to the mask: the mask moves to right after it.
    const down = connect(nodes, edges, "n1", "n3");
    const back = graphToSpec(nodes, down);
    expect(back.ok && back.spec.transforms.map((t) => t.type)).toEqual(["mask", "filter"]);
    expect(checkGraph(nodes, down)).toEqual([]); // no stage left loose
    // The mask drawn to the filter above it: the filter moves to right after the mask.
    const up = connect(nodes, edges, "n3", "n2");
    const again = graphToSpec(nodes, up);
    expect(again.ok && again.spec.transforms.map((t) => t.type)).toEqual(["mask", "filter"]);
    // A link that is already drawn changes nothing.
    expect(connect(nodes, edges, "n2", "n3")).toBe(edges);
  });

  it("only lets edges run forward", () => {
    const nodes = [node("a", "source"), node("t", "transform"), node("z", "sink")];
    expect(canConnect(nodes, "a", "t")).toBe(true);
    expect(canConnect(nodes, "t", "a")).toBe(false);
    expect(canConnect(nodes, "z", "t")).toBe(false);
    expect(canConnect(nodes, "t", "t")).toBe(false);
  });

  it("removing a transform joins its neighbours", () => {
    const { nodes, edges } = specToGraph(spec);
    const after = removeNode(nodes, edges, "n2");
    const back = graphToSpec(after.nodes, after.edges);
    expect(back.ok && back.spec.transforms.map((t) => t.type)).toEqual(["mask"]);
  });
});

describe("server errors", () => {
  it("parses paths", () => {
    expect(parseErrorPath("spec.transforms[1].config.pattern")).toEqual({ stage: "transforms[1]", field: "pattern" });
    expect(parseErrorPath("spec.source.config.security.password")).toEqual({
      stage: "source",
      field: "security.password",
    });
    expect(parseErrorPath("spec.sink")).toEqual({ stage: "sink", field: "" });
    // The stage's type (a plugin the execution mode cannot run) is the stage's own problem.
    expect(parseErrorPath("spec.source.type")).toEqual({ stage: "source", field: "" });
    expect(parseErrorPath("spec.transforms[2].type")).toEqual({ stage: "transforms[2]", field: "" });
    expect(parseErrorPath("spec.source.config")).toEqual({ stage: "source", field: "" });
    expect(parseErrorPath("spec.source.config.type")).toEqual({ stage: "source", field: "type" });
    expect(parseErrorPath("spec.runtime.mode")).toEqual({ stage: null, field: "runtime.mode" });
    expect(parseErrorPath("spec.errors.dead_letter.config.topic")).toEqual({
      stage: "errors",
      field: "dead_letter.config.topic",
    });
    expect(parseErrorPath("name")).toEqual({ stage: null, field: "name" });
    // A bus: a rule's own fields, its transforms' and its sinks' configs.
    expect(parseErrorPath("spec.rules[2].pattern")).toEqual({ stage: "rules[2]", field: "pattern" });
    expect(parseErrorPath("spec.rules[2].name")).toEqual({ stage: "rules[2]", field: "name" });
    expect(parseErrorPath("spec.rules[2].sinks")).toEqual({ stage: "rules[2]", field: "" });
    expect(parseErrorPath("spec.rules[2].transforms[0].config.x")).toEqual({
      stage: "rules[2].transforms[0]",
      field: "x",
    });
    expect(parseErrorPath("spec.rules[2].sinks[1].config.topic")).toEqual({
      stage: "rules[2].sinks[1]",
      field: "topic",
    });
    expect(parseErrorPath("spec.rules[0].sinks[0].type")).toEqual({ stage: "rules[0].sinks[0]", field: "" });
    expect(parseErrorPath("spec.rules")).toEqual({ stage: null, field: "rules" });
  });

  it("marks the exact node and field", () => {
    const grouped = errorsByNode(
      {
        "spec.transforms[0].config.pattern": ["unknown operator"],
        "spec.source.config.rate": ["too small"],
        "spec.sink.config.max_events": ["too big"],
        name: ["taken"],
      },
      { source: "a", "transforms[0]": "b", sink: "c" },
    );
    expect(grouped.nodes).toEqual({
      a: { rate: ["too small"] },
      b: { pattern: ["unknown operator"] },
      c: { max_events: ["too big"] },
    });
    expect(grouped.other).toEqual({ name: ["taken"] });
  });

  it("drops the branch name pydantic puts in union paths", () => {
    const config = { auth: { type: "basic", password: "x" }, topics: ["a"] };
    expect(alignErrorPath("auth.basic.username", config)).toBe("auth.username");
    expect(alignErrorPath("topics[0]", config)).toBe("topics[0]");
    expect(alignErrorPath("pattern", config)).toBe("pattern");
    const grouped = errorsByNode(
      { "spec.sink.config.auth.basic.username": ["field required"] },
      { source: "a", sink: "b" },
      { b: config },
    );
    expect(grouped.nodes).toEqual({ b: { "auth.username": ["field required"] } });
  });

  it("turns field paths into form errors", () => {
    expect(toFormErrors({ pattern: ["bad"], "topics[0]": ["empty"], "": ["stage"] })).toEqual({
      pattern: { __errors: ["bad"] },
      topics: { "0": { __errors: ["empty"] } },
      __errors: ["stage"],
    });
  });
});
