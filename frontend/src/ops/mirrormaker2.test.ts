import { describe, expect, it } from "vitest";

import { buildMirrorRequest, defaultOffsetsTopic, mirrorErrors, previewRows, type MirrorPreview } from "./mirrormaker2";

const form = (source_alias: string, offsets_topic = "", bootstrap_servers = "") => ({
  source_alias,
  offsets_topic,
  bootstrap_servers,
});

describe("buildMirrorRequest", () => {
  it("sends the alias alone when the rest is left to the server's defaults", () => {
    expect(buildMirrorRequest(form(" us-east "))).toEqual({ ok: true, body: { source_alias: "us-east" } });
  });

  it("sends a custom topic and brokers, spaces dropped", () => {
    expect(buildMirrorRequest(form("a", "my-offsets", "k1:9092, k2:9092"))).toEqual({
      ok: true,
      body: { source_alias: "a", offsets_topic: "my-offsets", bootstrap_servers: "k1:9092,k2:9092" },
    });
  });

  it("refuses what the server's allow-lists refuse, on each field", () => {
    const built = buildMirrorRequest(form("a.b", "__consumer_offsets", "no-port"));
    expect(built.ok).toBe(false);
    if (!built.ok)
      expect(Object.keys(built.errors).sort()).toEqual(["bootstrap_servers", "offsets_topic", "source_alias"]);
    expect(buildMirrorRequest(form("")).ok).toBe(false);
    expect(buildMirrorRequest(form("a", "a/b")).ok).toBe(false);
  });

  it("names the default offsets topic", () => {
    expect(defaultOffsetsTopic("a")).toBe("mm2-offsets.a.internal");
    expect(defaultOffsetsTopic(" ")).toBe("mm2-offsets.<source alias>.internal");
  });
});

describe("mirrorErrors", () => {
  it("places take-over and hand-back field errors on the fields, the rest apart", () => {
    expect(
      mirrorErrors({
        "from_mirrormaker2.source_alias": ["bad alias"],
        bootstrap_servers: ["not ours"],
        detail: ["stop it first"],
      }),
    ).toEqual({ source_alias: "bad alias", bootstrap_servers: "not ours", "": "stop it first" });
  });
});

describe("previewRows", () => {
  const preview: MirrorPreview = {
    source_alias: "a",
    bootstrap_servers: "k:9092",
    offsets_topic: "mm2-offsets.a.internal",
    mirrormaker2: [
      { partition: { cluster: "a", topic: "t", partition: 1 }, offset: { offset: 41 } },
      { partition: { cluster: "a", topic: "t", partition: 0 }, offset: { offset: 9 } },
    ],
    takeover: [],
    channel: [
      { partition: { topic: "t", partition: 0 }, offset: { offset: 90 } },
      { partition: { topic: "t", partition: 2 }, offset: { offset: 0 } },
    ],
  };

  it("a take-over resumes right after MM2's last copied record", () => {
    expect(previewRows(preview, "takeover").map((r) => [r.key, r.mirror, r.channel, r.after])).toEqual([
      ["t/0", 9, 90, 10],
      ["t/1", 41, null, 42],
      ["t/2", null, 0, 0],
    ]);
  });

  it("a hand-back writes the channel's next offset minus one", () => {
    expect(previewRows(preview, "handback").map((r) => [r.key, r.after])).toEqual([
      ["t/0", 89],
      ["t/1", 41],
      ["t/2", -1],
    ]);
  });
});
