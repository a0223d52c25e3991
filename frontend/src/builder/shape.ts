/**
 * The shape of a channel's events, as the builder knows it: the field paths of a JSON Schema
 * (the channel's discovered schema, or a registry subject picked for the source), the fields
 * a stage's config names, which of those the schema does not have, and a sample event
 * generated from the schema. Paths are dotted, in the event's CloudEvents JSON form
 * (attributes at the top, the payload under `data`); an array's element fields sit under the
 * array's own path (`data.items.sku`), as event patterns match through arrays.
 */

export type JsonSchema = Record<string, unknown>;

export interface FieldPath {
  path: string;
  types: string[];
}

/** Every field of an object schema (the discovered schema, or a JSON Schema subject). */
export function fieldPaths(schema: JsonSchema | null | undefined): FieldPath[] {
  const found = new Map<string, Set<string>>();
  const walk = (node: unknown, path: string, depth: number) => {
    if (!isObject(node) || depth > 16) return;
    if (path) {
      const kinds = found.get(path) ?? new Set<string>();
      for (const kind of typesOf(node)) kinds.add(kind);
      found.set(path, kinds);
    }
    for (const branch of ["anyOf", "oneOf", "allOf"]) {
      const list = node[branch];
      if (Array.isArray(list)) for (const option of list) walk(option, path, depth + 1);
    }
    const properties = node.properties;
    if (isObject(properties)) {
      for (const [key, child] of Object.entries(properties)) walk(child, path ? `${path}.${key}` : key, depth + 1);
    }
    const items = node.items;
    if (isObject(items)) {
      const props = items.properties;
      if (isObject(props)) {
        for (const [key, child] of Object.entries(props)) walk(child, path ? `${path}.${key}` : key, depth + 1);
      }
    }
  };
  walk(schema, "", 0);
  return [...found.entries()]
    .map(([path, kinds]) => ({ path, types: [...kinds] }))
    .sort((a, b) => a.path.localeCompare(b.path));
}

/** The schema of a registry subject's payload as an event's shape: a JSON Schema of the
 * whole event (it has `data` or CloudEvents attributes) as it is, one of a payload under
 * `data` beside the CloudEvents attributes. */
export function asEventSchema(schema: JsonSchema): JsonSchema {
  const props = isObject(schema.properties) ? schema.properties : {};
  if ("data" in props || ("specversion" in props && "type" in props)) return schema;
  const attribute = { type: "string" };
  return {
    type: "object",
    properties: {
      id: attribute,
      source: attribute,
      specversion: attribute,
      type: attribute,
      subject: attribute,
      time: attribute,
      data: schema,
    },
  };
}

function typesOf(node: Record<string, unknown>): string[] {
  const kind = node.type;
  if (typeof kind === "string") return [kind];
  if (Array.isArray(kind)) return kind.filter((k): k is string => typeof k === "string");
  return [];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const PATTERN_OPERATORS = new Set(["$or"]);

/** The field paths an event pattern names (its keys down to its leaf arrays). */
export function patternPaths(pattern: unknown, prefix = ""): string[] {
  if (!isObject(pattern)) return [];
  const paths: string[] = [];
  for (const [key, value] of Object.entries(pattern)) {
    if (PATTERN_OPERATORS.has(key)) {
      if (Array.isArray(value)) for (const branch of value) paths.push(...patternPaths(branch, prefix));
      continue;
    }
    const path = prefix ? `${prefix}.${key}` : key;
    if (isObject(value)) paths.push(...patternPaths(value, path));
    else paths.push(path);
  }
  return [...new Set(paths)];
}

/** `$.data.items[0].sku` → `data.items.sku` (array indexes are matched through). */
export function jsonPathToField(jsonPath: string): string | null {
  const text = jsonPath.trim();
  if (!text.startsWith("$")) return null;
  const body = text
    .slice(1)
    .replace(/\[(\d+|\*)\]/g, "")
    .replace(/\['([^']+)'\]/g, ".$1")
    .replace(/^\./, "");
  return body === "" ? null : body;
}

/** The fields a stage's config reads, by stage type (the fields it writes are not checked). */
export function stageFieldPaths(type: string, config: Record<string, unknown>): string[] {
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  const keys = (value: unknown): string[] => (isObject(value) ? Object.keys(value) : []);
  switch (type) {
    case "filter":
      return patternPaths(config.pattern);
    case "input-transformer":
    case "input_transformer":
      return Object.values(isObject(config.input_paths) ? config.input_paths : {})
        .map((p) => (typeof p === "string" ? jsonPathToField(p) : null))
        .filter((p): p is string => p !== null);
    case "rename":
    case "cast":
      return keys(config.fields);
    case "drop":
    case "mask":
      return strings(config.fields);
    case "extract":
    case "set-key":
    case "set_key":
    case "route":
      return text(config.field);
    case "kafka": // the sink's; a source's config has neither
      return [...text(config.key_field), ...text(config.topic_field)];
    case "cloudevents": {
      const attributes = isObject(config.attributes) ? Object.values(config.attributes) : [];
      const fromFields = attributes.flatMap((value) => (isObject(value) ? text(value.field) : []));
      return [...text(config.subject_field), ...fromFields];
    }
    case "enrich": {
      const input = typeof config.input === "string" ? config.input : "$.data";
      const path = jsonPathToField(input);
      return path ? [path] : [];
    }
    default:
      return [];
  }
}

function text(value: unknown): string[] {
  return typeof value === "string" && value ? [value] : [];
}

/** The paths the schema does not have. A path under a field of no known structure (an
 * object without properties, or of any type) is not reported: the schema cannot tell. */
export function unknownFields(paths: string[], known: FieldPath[]): string[] {
  const index = new Map(known.map((f) => [f.path, f.types]));
  return paths.filter((path) => {
    if (index.has(path)) return false;
    const parts = path.split(".");
    for (let i = parts.length - 1; i > 0; i--) {
      const parent = index.get(parts.slice(0, i).join("."));
      if (parent === undefined) continue;
      const open =
        parent.length === 0 || (parent.includes("object") && !hasChildren(known, parts.slice(0, i).join(".")));
      return !open;
    }
    return true;
  });
}

function hasChildren(known: FieldPath[], path: string): boolean {
  return known.some((f) => f.path.startsWith(`${path}.`));
}

/** A sample event that fits the schema: each field given a value of its first non-null type. */
export function sampleFromSchema(schema: JsonSchema): unknown {
  const value = (node: unknown, key: string, depth: number): unknown => {
    if (!isObject(node) || depth > 12) return null;
    if (Array.isArray(node.examples) && node.examples.length) return node.examples[0];
    if (Array.isArray(node.enum) && node.enum.length) return node.enum[0];
    const branch = ["anyOf", "oneOf"].map((b) => node[b]).find(Array.isArray) as unknown[] | undefined;
    if (branch && branch.length)
      return value(branch.find((o) => isObject(o) && o.type !== "null") ?? branch[0], key, depth + 1);
    const kinds = typesOf(node);
    const kind = kinds.find((k) => k !== "null") ?? kinds[0] ?? (isObject(node.properties) ? "object" : "null");
    switch (kind) {
      case "object": {
        const out: Record<string, unknown> = {};
        const props = isObject(node.properties) ? node.properties : {};
        for (const [name, child] of Object.entries(props)) out[name] = value(child, name, depth + 1);
        return out;
      }
      case "array":
        return isObject(node.items) ? [value(node.items, key, depth + 1)] : [];
      case "string":
        return sampleString(key, node);
      case "integer":
        return 1;
      case "number":
        return 1.5;
      case "boolean":
        return true;
      default:
        return null;
    }
  };
  const event = value(schema, "", 0);
  if (isObject(event)) {
    if ("specversion" in event) event.specversion = "1.0";
    if ("time" in event && typeof event.time === "string") event.time = "2026-11-27T12:00:00Z";
  }
  return event;
}

function sampleString(key: string, node: Record<string, unknown>): string {
  if (node.format === "date-time" || key === "time") return "2026-11-27T12:00:00Z";
  if (key === "id") return "sample-1";
  return `sample ${key}`.trim();
}

/** The word being typed at `caret` in `text` (a field path's characters), with its start. */
export function wordAt(text: string, caret: number): { word: string; start: number } {
  let start = caret;
  while (start > 0 && /[A-Za-z0-9_.$\-[\]]/.test(text[start - 1]!)) start--;
  return { word: text.slice(start, caret), start };
}

/** Paths to suggest for a partly typed word (a JSONPath's `$.` is allowed before it). */
export function suggest(paths: FieldPath[], word: string, limit = 8): FieldPath[] {
  const bare = word.replace(/^\$\.?/, "");
  if (bare === "" && word === "") return [];
  const lower = bare.toLowerCase();
  const starts = paths.filter((f) => f.path.toLowerCase().startsWith(lower));
  const contains = paths.filter((f) => !f.path.toLowerCase().startsWith(lower) && f.path.toLowerCase().includes(lower));
  return [...starts, ...contains].filter((f) => f.path !== bare).slice(0, limit);
}
