import { describe, expect, it } from "vitest";

import type { ChannelSpec, Rule } from "../api/types";
import { isShared } from "./branches";
import { nameRuleErrors, patternSummary, ruleNameProblems, rulesToTest, ruleTestRows, ruleTestSummary } from "./rules";
import {
  SECRET_MARKER,
  branchTargets,
  checkGraph,
  connect,
  connectionKind,
  errorsByNode,
  graphToSpec,
  insertRuleNodes,
  removeNode,
  specToGraph,
  type GraphEdge,
  type GraphNode,
} from "./spec";

const kafka = (topic: string) => ({ type: "kafka", config: { bootstrap_servers: "k:9092", topic } });

/** A rule as the server dumps it: every field present. */
const rule = (name: string, sinks: Rule["sinks"], extra: Partial<Rule> = {}): Rule => ({
  name,
  description: "",
  enabled: true,
  pattern: null,
  transforms: [],
  sinks,
  ...extra,
});

const source = { type: "kafka", config: { bootstrap_servers: "k:9092", topics: ["orders"] } };
const shared = [{ type: "cloudevents", config: { mode: "wrap" } }];

const threeRules: ChannelSpec = {
  source,
  transforms: shared,
  rules: [
    rule("big-orders", [kafka("big")], {
      pattern: { data: { amount: [{ numeric: [">", 100] }] } },
      transforms: [
        { type: "input_transformer", config: { template: { id: "<$.id>" } } },
        { type: "mask", config: { fields: ["data.card"] } },
      ],
    }),
    rule("eu", [kafka("eu"), { type: "files", config: { path: "eu", format: "jsonl" } }], {
      pattern: { data: { region: [{ prefix: "eu-" }] } },
      description: "European orders to Kafka and files",
    }),
    rule("everything", [{ type: "jdbc", config: { url: "sqlite:///all.db", table: "orders" } }], { enabled: false }),
  ],
};

const node = (id: string, kind: GraphNode["data"]["kind"], type = kind as string, config = {}): GraphNode => ({
  id,
  position: { x: 0, y: 0 },
  data: { kind, type, config },
});
const edge = (source: string, target: string): GraphEdge => ({ id: `${source}-${target}`, source, target });

describe("a bus on the canvas", () => {
  it("round-trips a bus with one rule (a bus, not a linear channel)", () => {
    const spec: ChannelSpec = { source, transforms: [], rules: [rule("only", [kafka("out")])] };
    const { nodes, edges, stages } = specToGraph(spec);
    expect(nodes.map((n) => n.data.kind)).toEqual(["source", "rule", "sink"]);
    expect(nodes[1]).toMatchObject({ type: "rule", data: { config: { name: "only", enabled: true } } });
    const back = graphToSpec(nodes, edges);
    expect(back).toEqual({ ok: true, spec, stages });
    expect(stages).toEqual({ source: "n1", "rules[0]": "n2", "rules[0].sinks[0]": "n3" });
  });

  it("round-trips three rules: shared and own transforms, two sinks in one rule, a disabled rule", () => {
    const { nodes, edges, stages } = specToGraph(threeRules);
    expect(nodes.map((n) => `${n.data.kind}:${n.data.type}`)).toEqual([
      "source:kafka",
      "transform:cloudevents",
      "rule:rule",
      "transform:input_transformer",
      "transform:mask",
      "sink:kafka",
      "rule:rule",
      "sink:kafka",
      "sink:files",
      "rule:rule",
      "sink:jdbc",
    ]);
    const back = graphToSpec(nodes, edges);
    expect(back.ok && back.spec).toEqual(threeRules);
    expect(back.ok && back.stages).toEqual(stages);
    expect(stages["rules[0].transforms[1]"]).toBe("n5");
    expect(stages["rules[1].sinks[1]"]).toBe("n9");
    // No two nodes on top of each other.
    const places = new Set(nodes.map((n) => `${n.position.x},${n.position.y}`));
    expect(places.size).toBe(nodes.length);
  });

  it("keeps a linear channel linear (no rules key) and a bus without a sink key", () => {
    const linear: ChannelSpec = { source, transforms: shared, sink: kafka("out") };
    const a = specToGraph(linear);
    const back = graphToSpec(a.nodes, a.edges);
    expect(back.ok && back.spec).toEqual(linear);
    expect(back.ok && "rules" in back.spec).toBe(false);
    const b = specToGraph(threeRules);
    const bus = graphToSpec(b.nodes, b.edges);
    expect(bus.ok && "sink" in bus.spec).toBe(false);
  });

  it("fills in what a hand-written rule leaves out", () => {
    const spec = { source, transforms: [], rules: [{ name: "a", sinks: [kafka("x")] }] } as ChannelSpec;
    const { nodes, edges } = specToGraph(spec);
    const back = graphToSpec(nodes, edges);
    expect(back.ok && back.spec.rules).toEqual([rule("a", [kafka("x")])]);
  });

  it("never prefills the secrets of a rule's sinks", () => {
    const spec: ChannelSpec = {
      source,
      transforms: [],
      rules: [rule("db", [{ type: "jdbc", config: { url: "x", password: SECRET_MARKER } }])],
    };
    expect(specToGraph(spec).nodes[2]!.data.config).toEqual({ url: "x" });
  });

  it("exports branches without rule nodes as rules named default (the first), rule-1, rule-2, … (skipping taken names)", () => {
    const nodes = [
      node("s", "source", "kafka"),
      node("r", "rule", "rule", { name: "rule-1", enabled: true }),
      node("a", "sink", "kafka"),
      node("b", "sink", "kafka"),
      node("t", "transform", "mask"),
      node("c", "sink", "kafka"),
    ];
    const edges = [edge("s", "r"), edge("r", "a"), edge("s", "b"), edge("s", "t"), edge("t", "c")];
    const back = graphToSpec(nodes, edges);
    expect(back.ok && back.spec.rules?.map((r) => [r.name, r.transforms?.length, r.sinks.length])).toEqual([
      ["rule-1", 0, 1],
      ["rule-2", 0, 1],
      ["rule-3", 1, 1],
    ]);
    // An implicit rule's own errors (its name) go to the branch's first node.
    expect(back.ok && back.stages["rules[1]"]).toBe("b");
    expect(back.ok && back.stages["rules[2]"]).toBe("t");
    const bare = graphToSpec(
      [node("s", "source", "kafka"), node("a", "sink", "kafka"), node("b", "sink", "files")],
      [edge("s", "a"), edge("s", "b")],
    );
    expect(bare.ok && bare.spec.rules?.map((r) => r.name)).toEqual(["default", "rule-1"]);
  });

  it("maps the server's errors at rules[i] paths onto the exact nodes", () => {
    const { nodes, edges } = specToGraph(threeRules);
    const back = graphToSpec(nodes, edges);
    if (!back.ok) throw new Error("not a spec");
    const configs = Object.fromEntries(nodes.map((n) => [n.id, n.data.config]));
    const grouped = errorsByNode(
      {
        "spec.rules[0].pattern": ["unknown operator 'numberic'"],
        "spec.rules[0].transforms[1].config.fields": ["empty"],
        "spec.rules[1].sinks[1].config.path": ["outside the data root"],
        "spec.rules[1].sinks": ["has 6 sinks; the limit is 5"],
        "spec.rules[2].name": ["rules[0] is named 'big-orders' too"],
        "spec.rules[2].sinks[0].type": ["unknown sink"],
        "spec.transforms[0].config.mode": ["bad"],
        "spec.rules": ["real-time mode cannot run a bus"],
      },
      back.stages,
      configs,
    );
    expect(grouped.nodes).toEqual({
      n3: { pattern: ["unknown operator 'numberic'"] },
      n5: { fields: ["empty"] },
      n9: { path: ["outside the data root"] },
      n7: { "": ["has 6 sinks; the limit is 5"] },
      n10: { name: ["rules[0] is named 'big-orders' too"] },
      n11: { "": ["unknown sink"] },
      n2: { mode: ["bad"] },
    });
    expect(grouped.other).toEqual({ "spec.rules": ["real-time mode cannot run a bus"] });
  });
});

describe("drawing branches", () => {
  const linear = () => specToGraph({ source, transforms: [{ type: "filter", config: {} }], sink: kafka("first") });

  it("a second sink drawn from the end of the chain forks it into two rules", () => {
    const { nodes, edges } = linear(); // n1 → n2 (filter) → n3 (sink)
    const withSink = [...nodes, { ...node("n4", "sink", "kafka"), position: { x: 480, y: 200 } }];
    let next = 5;
    const drawn = connect(withSink, edges, "n2", "n4");
    expect(drawn).toHaveLength(3); // added beside n2 → n3, not in its place
    const forked = insertRuleNodes(withSink, drawn, "n2", () => `n${next++}`);
    const back = graphToSpec(forked.nodes, forked.edges);
    expect(back.ok && back.spec.transforms.map((t) => t.type)).toEqual(["filter"]);
    // The branch the linear channel had is its rule "default" (as the server names a linear
    // channel's implicit rule, so that its sink keeps its secrets); the new one is rule-1.
    expect(back.ok && back.spec.rules?.map((r) => [r.name, r.pattern, r.sinks[0]!.config.topic])).toEqual([
      ["default", null, "first"],
      ["rule-1", null, undefined],
    ]);
    // Each branch moved right to make room for its rule node, which took its place.
    const at = (id: string) => forked.nodes.find((n) => n.id === id)!.position;
    expect(at("n5")).toEqual({ x: 480, y: 0 });
    expect(at("n3")).toEqual({ x: 720, y: 0 });
    expect(at("n6")).toEqual({ x: 480, y: 200 });
  });

  it("a second sink inside a rule is that rule's second target (no new rule)", () => {
    const { nodes, edges } = specToGraph({ source, transforms: [], rules: [rule("a", [kafka("x")])] });
    const withSink = [...nodes, node("n4", "sink", "files")];
    const drawn = connect(withSink, edges, "n2", "n4");
    const forked = insertRuleNodes(withSink, drawn, "n2", () => "never");
    expect(forked.nodes).toHaveLength(4);
    const back = graphToSpec(forked.nodes, forked.edges);
    expect(back.ok && back.spec.rules?.[0]!.sinks.map((s) => s.type)).toEqual(["kafka", "files"]);
  });

  it("re-drawing a transform of the chain reorders it; a new transform forks", () => {
    const nodes = [
      node("s", "source"),
      node("a", "transform"),
      node("b", "transform"),
      node("z", "sink"),
      node("n", "transform"),
    ];
    const edges = [edge("s", "a"), edge("a", "b"), edge("b", "z")];
    const pairs = (list: GraphEdge[]) => list.map((e) => `${e.source}>${e.target}`).sort();
    expect(connectionKind(nodes, edges, "s", "b")).toBe("move");
    expect(pairs(connect(nodes, edges, "s", "b"))).toEqual(["a>z", "b>a", "s>b"]);
    // A transform that is not on the chain is a second branch: the first link stays.
    expect(connectionKind(nodes, edges, "s", "n")).toBe("add");
    expect(pairs(connect(nodes, edges, "s", "n"))).toEqual(["a>b", "b>z", "s>a", "s>n"]);
    // "Add a branch to" offers only stages that read from nothing yet (z is b's sink).
    expect(branchTargets(nodes, edges, "s")).toEqual(["n"]);
  });

  it("offers as branches only loose stages, and inside a rule only sinks", () => {
    const { nodes, edges } = specToGraph(threeRules);
    const loose = [...nodes, node("x", "transform", "mask"), node("y", "sink", "files")];
    expect(branchTargets(loose, edges, "n2")).toEqual(["x", "y"]); // the fork: a new rule either way
    expect(branchTargets(loose, edges, "n5")).toEqual(["y"]); // big-orders' mask: a further sink
  });

  it("moves the fork's transform with the rules it feeds handed over", () => {
    const { nodes, edges } = specToGraph({ ...threeRules, transforms: [...shared, { type: "mask", config: {} }] });
    // n1 → n2 (cloudevents) → n3 (mask) → rules; the mask drawn from the source moves first.
    const moved = connect(nodes, edges, "n1", "n3");
    const back = graphToSpec(nodes, moved);
    expect(back.ok && back.spec.transforms.map((t) => t.type)).toEqual(["mask", "cloudevents"]);
    expect(back.ok && back.spec.rules?.map((r) => r.name)).toEqual(["big-orders", "eu", "everything"]);
  });

  it("knows which stages stand before the rules", () => {
    const { nodes, edges } = specToGraph(threeRules);
    expect(isShared(nodes, edges, "n1")).toBe(true);
    expect(isShared(nodes, edges, "n2")).toBe(true);
    expect(isShared(nodes, edges, "n4")).toBe(false); // a rule's transform
    expect(isShared(nodes, edges, "n3")).toBe(false); // a rule
  });

  it("removing a rule node joins the fork to its branch", () => {
    const { nodes, edges } = specToGraph(threeRules);
    const after = removeNode(nodes, edges, "n7"); // rule eu, with two sinks
    const back = graphToSpec(after.nodes, after.edges);
    expect(back.ok && back.spec.rules?.map((r) => r.name)).toEqual(["big-orders", "everything", "rule-1", "rule-2"]);
  });

  it("names what keeps a branched canvas from being a bus", () => {
    const nodes = [
      node("s", "source"),
      node("r", "rule", "rule", { name: "a" }),
      node("q", "rule", "rule", { name: "b" }),
      node("z", "sink"),
    ];
    expect(checkGraph(nodes, [edge("s", "r"), edge("r", "q"), edge("q", "z")])).toEqual([
      { message: "A rule starts right after the source or the shared transforms.", nodeIds: ["q"] },
    ]);
    const forkInRule = [
      node("s", "source"),
      node("r", "rule", "rule", { name: "a" }),
      node("t", "transform"),
      node("u", "transform"),
      node("z", "sink"),
      node("y", "sink"),
    ];
    const problems = checkGraph(forkInRule, [
      edge("s", "r"),
      edge("r", "t"),
      edge("r", "z"),
      edge("t", "y"),
      edge("r", "u"),
    ]);
    expect(problems[0]!.nodeIds).toEqual(["r"]);
    expect(checkGraph([node("s", "source"), node("r", "rule"), node("z", "sink")], [edge("s", "r")])).toEqual([
      { message: "Connect each branch through to a sink.", nodeIds: ["r"] },
    ]);
  });
});

describe("rule helpers", () => {
  it("checks names as the server does", () => {
    expect(ruleNameProblems("big-orders", ["eu"])).toEqual([]);
    expect(ruleNameProblems("", [])).toEqual(["A rule needs a name."]);
    expect(ruleNameProblems("Big_Orders", [])).toHaveLength(1);
    expect(ruleNameProblems("-a", [])).toHaveLength(1);
    expect(ruleNameProblems("eu", ["eu"])[0]).toMatch(/unique/);
  });

  it("sums a pattern up in a line", () => {
    expect(patternSummary(null)).toBe("every event");
    expect(patternSummary({ data: { amount: [1], region: ["eu"], x: [1] } })).toBe(
      "matches data.amount, data.region +1",
    );
    expect(patternSummary({ $or: [] })).toBe("matches $or");
    expect(patternSummary([1])).toBe("pattern (not an object)");
  });

  it("sends the canvas's rules with their own transforms to the rules test and marks each answer", () => {
    const { nodes, edges } = specToGraph(threeRules);
    const back = graphToSpec(nodes, edges);
    if (!back.ok || !back.spec.rules) throw new Error("not a bus");
    const sent = rulesToTest(back.spec.rules);
    expect(sent.map((r) => [r.name, r.pattern, r.enabled])).toEqual([
      ["big-orders", { data: { amount: [{ numeric: [">", 100] }] } }, true],
      ["eu", { data: { region: [{ prefix: "eu-" }] } }, true],
      ["everything", null, false],
    ]);
    // The rule's own transforms go too: the server decides its filters, and stops at the rest.
    expect(sent[0]!.transforms).toEqual(
      back.spec.rules[0]!.transforms!.map((t) => ({ type: t.type, config: t.config })),
    );
    const answer = {
      results: [
        {
          rule: "big-orders",
          matched: null,
          verdict: "undecided" as const,
          pattern_matched: true,
          stage: "transforms[0]",
          reason: "Its pattern matches, but its transform 1 (input_transformer) runs only in Spark.",
        },
        {
          rule: "eu",
          matched: false,
          verdict: "no_match" as const,
          pattern_matched: false,
          stage: "",
          reason: "Its pattern does not match the event.",
        },
        {
          rule: "everything",
          matched: false,
          verdict: "disabled" as const,
          pattern_matched: false,
          stage: "",
          reason: "The rule is disabled: it gets no events.",
        },
      ],
    };
    const rows = ruleTestRows(back.spec.rules, answer, back.stages);
    expect(rows.map((r) => [r.rule, r.nodeId, r.matched, r.verdict])).toEqual([
      ["big-orders", "n3", null, "undecided"],
      ["eu", "n7", false, "no_match"],
      ["everything", "n10", false, "disabled"],
    ]);
    expect(rows[0]!.reason).toContain("input_transformer");
    expect(ruleTestSummary(rows)).toBe("0 of 3 rules match; 1 not decided here");
  });

  it("never says more than the server: a rule the answer leaves out is not decided", () => {
    const rules = [rule("default", [kafka("eu")]), rule("rule-1", [kafka("us")])];
    const answer = {
      results: [
        { rule: "rule-1", matched: true, verdict: "matched" as const, pattern_matched: true, stage: "", reason: "" },
      ],
    };
    const rows = ruleTestRows(rules, answer, { "rules[0]": "n3", "rules[1]": "n6" });
    expect(rows.map((r) => [r.rule, r.matched, r.verdict])).toEqual([
      ["default", null, "undecided"],
      ["rule-1", true, "matched"],
    ]);
    expect(ruleTestSummary(rows)).toBe("1 of 2 rules match; 1 not decided here");
  });

  it("shows a filter that drops the event as the server located it", () => {
    const eu = { type: "filter", config: { pattern: { data: { region: [{ prefix: "eu-" }] } } } };
    const rules = [rule("eu", [kafka("eu")], { transforms: [eu] })];
    const answer = {
      results: [
        {
          rule: "eu",
          matched: false,
          verdict: "dropped" as const,
          pattern_matched: true,
          stage: "transforms[0]",
          reason: "Its pattern matches; its filter (transform 1) drops the event.",
        },
      ],
    };
    const rows = ruleTestRows(rules, answer, { "rules[0]": "n3" });
    expect(rows[0]).toEqual({
      rule: "eu",
      nodeId: "n3",
      matched: false,
      verdict: "dropped",
      reason: "Its pattern matches; its filter (transform 1) drops the event.",
    });
    expect(ruleTestSummary(rows)).toBe("0 of 1 rules match");
  });

  it("names the rule and numbers its transform in the rules test's errors", () => {
    const rules = [{ name: "eu" }, { name: "us" }];
    expect(
      nameRuleErrors(
        [
          "rules[1].pattern: source: must be an object",
          "rules[0].transforms[2].config.pattern: detail: bad",
          "rules[0].transforms[0].type: This field is required.",
          "rules[7].name: unknown",
          "event: Must be a JSON object.",
        ],
        rules,
      ),
    ).toEqual([
      "rule us, pattern: source: must be an object",
      "rule eu, transform 3: detail: bad",
      "rule eu, transform 1, type: This field is required.",
      "rules[7].name: unknown",
      "event: Must be a JSON object.",
    ]);
  });
});
