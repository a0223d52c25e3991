/** Import and export of a channel as JSON ({name, description, spec}). */

import type { ChannelSpec } from "../api/types";
import { isPlainObject } from "../graph/spec";

export interface ChannelFile {
  name: string;
  description: string;
  spec: ChannelSpec;
}

/** Read an exported channel (or a bare spec); throws with a readable message. */
export function parseChannelFile(text: string): ChannelFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`Not JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!isPlainObject(value)) throw new Error("Expected a JSON object.");
  const spec = isPlainObject(value.spec) ? value.spec : value;
  if (!isPlainObject(spec.source) || !isPlainObject(spec.sink))
    throw new Error("A channel spec needs a source and a sink.");
  const transforms = Array.isArray(spec.transforms) ? spec.transforms : [];
  return {
    name: typeof value.name === "string" ? value.name : "",
    description: typeof value.description === "string" ? value.description : "",
    spec: { ...(spec as unknown as ChannelSpec), transforms } as ChannelSpec,
  };
}

export function downloadJson(filename: string, value: unknown): void {
  const blob = new Blob([JSON.stringify(value, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  link.click();
  URL.revokeObjectURL(url);
}
