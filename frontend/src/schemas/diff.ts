/** A unified diff (as GET /schemas/{subject}/diff answers it) as lines to colour. */

export interface DiffLine {
  kind: "added" | "removed" | "context" | "hunk";
  text: string;
}

export function diffLines(unified: string): DiffLine[] {
  return unified
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("+++") && !line.startsWith("---"))
    .map((line) => {
      if (line.startsWith("@@")) return { kind: "hunk", text: line };
      if (line.startsWith("+")) return { kind: "added", text: line };
      if (line.startsWith("-")) return { kind: "removed", text: line };
      return { kind: "context", text: line };
    });
}

/** Pretty text of a stored schema: indented JSON for Avro and JSON Schema, as stored otherwise. */
export function prettySchema(schemaType: string, text: string): string {
  if (schemaType === "PROTOBUF") return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
