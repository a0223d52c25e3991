import { describe, expect, it } from "vitest";

import { diffLines, prettySchema } from "./diff";

describe("diffLines", () => {
  it("classifies a unified diff's lines and drops the file headers", () => {
    const unified = '--- s v1\n+++ s v2\n@@ -1,2 +1,3 @@\n {\n-  "a": 1\n+  "a": 2\n+  "b": 3\n';
    expect(diffLines(unified).map((l) => l.kind)).toEqual(["hunk", "context", "removed", "added", "added"]);
  });

  it("is empty for identical versions", () => {
    expect(diffLines("")).toEqual([]);
  });
});

describe("prettySchema", () => {
  it("indents JSON schemas and leaves Protobuf descriptors as they are", () => {
    expect(prettySchema("AVRO", '{"type":"string"}')).toBe('{\n  "type": "string"\n}');
    expect(prettySchema("PROTOBUF", "CgVhLnByb3Rv")).toBe("CgVhLnByb3Rv");
  });
});
