/**
 * Plugin JSON Schemas (pydantic's) made friendly for the form library: $refs inlined,
 * Optional[X] (anyOf X | null) read as X, and a uiSchema that renders secrets as
 * password inputs and free-form JSON (event patterns, templates) as a JSON editor.
 */

import type { JsonSchema } from "../api/types";
import { isPlainObject } from "./spec";

const MAX_DEPTH = 8;

export function simplifySchema(schema: JsonSchema): JsonSchema {
  return simplify(schema, schema, 0);
}

function simplify(node: JsonSchema, root: JsonSchema, depth: number): JsonSchema {
  if (depth > MAX_DEPTH) return {};
  let current: JsonSchema = { ...node };
  if (typeof current.$ref === "string") {
    const target = resolvePointer(root, current.$ref);
    const { $ref: _ref, ...rest } = current;
    void _ref;
    current = { ...(target ?? {}), ...rest };
  }
  if (Array.isArray(current.anyOf)) {
    const branches = current.anyOf as JsonSchema[];
    const nonNull = branches.filter((b) => !(isPlainObject(b) && b.type === "null"));
    if (nonNull.length === 1 && nonNull.length < branches.length) {
      const { anyOf: _anyOf, ...rest } = current;
      void _anyOf;
      current = { ...simplify(nonNull[0]!, root, depth + 1), ...rest };
      if (current.default === null) delete current.default;
    } else {
      const union = objectUnion(current, "anyOf", root, depth);
      if (!union) return freeJson(current);
      current = union;
    }
  }
  if (Array.isArray(current.oneOf)) {
    const union = objectUnion(current, "oneOf", root, depth);
    if (!union) return freeJson(current);
    current = union;
  }
  delete current.$defs;
  if (isPlainObject(current.properties)) {
    const props: Record<string, JsonSchema> = {};
    for (const [key, value] of Object.entries(current.properties)) {
      props[key] = simplify(value as JsonSchema, root, depth + 1);
    }
    current.properties = props;
  }
  if (isPlainObject(current.items)) current.items = simplify(current.items, root, depth + 1);
  if (isPlainObject(current.additionalProperties))
    current.additionalProperties = simplify(current.additionalProperties, root, depth + 1);
  return current;
}

/**
 * A union of objects (http auth: none | basic | bearer | api_key) stays a union: the form
 * offers a choice and each branch's fields, secrets as password inputs. Any other union
 * (a string or an object, …) is edited as JSON and checked by the server, because the form
 * library's own handling would mangle such values while computing defaults.
 */
function objectUnion(
  schema: JsonSchema,
  keyword: "anyOf" | "oneOf",
  root: JsonSchema,
  depth: number,
): JsonSchema | null {
  const branches = (schema[keyword] as JsonSchema[]).map((b) => simplify(b, root, depth + 1));
  if (!branches.every((b) => b.type === "object" && isPlainObject(b.properties))) return null;
  const out: JsonSchema = { ...schema, [keyword]: branches };
  const discriminator = schema.discriminator;
  if (isPlainObject(discriminator)) out.discriminator = { propertyName: discriminator.propertyName };
  return out;
}

/** Any JSON value, keeping what describes the field. */
function freeJson(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const key of ["title", "description", "default", "examples"]) {
    if (schema[key] !== undefined) out[key] = schema[key];
  }
  // A union one of whose options is text (`earliest` or an object): its editor takes text too.
  const options = [schema.anyOf, schema.oneOf].flatMap((o) => (Array.isArray(o) ? (o as JsonSchema[]) : []));
  if (options.some((option) => isPlainObject(option) && option.type === "string")) out[TEXT_TOO] = true;
  return out;
}

/** Marks a free-form JSON field whose value may also be plain text (see builder/jsonText.ts). */
export const TEXT_TOO = "x-text-too";

function resolvePointer(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (!ref.startsWith("#/")) return undefined;
  let cursor: unknown = root;
  for (const part of ref.slice(2).split("/")) {
    if (!isPlainObject(cursor)) return undefined;
    cursor = cursor[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  }
  return isPlainObject(cursor) ? cursor : undefined;
}

/** Whether a (simplified) schema is a secret: write-only or a password. */
export function isSecret(schema: JsonSchema): boolean {
  return schema.writeOnly === true || schema.format === "password";
}

/** Free-form JSON: any value, or an object whose keys are not known in advance. */
export function isFreeJson(schema: JsonSchema): boolean {
  if (Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf)) return false;
  if (schema.type === undefined && !schema.enum && !schema.const) return true;
  return schema.type === "object" && !isPlainObject(schema.properties);
}

export type UiSchema = Record<string, unknown>;

/** The JSON editor field labels itself (the form library would not, for objects). */
const JSON_FIELD = { "ui:field": "json", "ui:label": false };
/** Lists of strings are typed as one comma-separated line. */
const STRING_LIST_FIELD = { "ui:field": "stringList", "ui:label": false };
/** A path into the event (the server marks it): typed with the known fields suggested. */
const FIELD_PATH_FIELD = { "ui:field": "fieldPath", "ui:label": false };

/** The keyword the server puts on a config field holding a path into the event
 * (pipelines/spec/fieldpaths.py FIELD_PATH_KEY): "read", "write" or "jsonpath". */
export const FIELD_PATH_KEY = "x-sluice-field-path";

/** Whether a (simplified) schema is a single text holding a path into the event. */
export function isFieldPath(schema: JsonSchema): boolean {
  return typeof schema[FIELD_PATH_KEY] === "string" && schema.type === "string" && !schema.enum;
}

/** uiSchema for a simplified config schema (see the module doc). */
export function uiSchemaFor(schema: JsonSchema): UiSchema {
  const ui: UiSchema = {};
  const props = isPlainObject(schema.properties) ? schema.properties : {};
  const order: string[] = [];
  for (const [key, value] of Object.entries(props)) {
    const child = value as JsonSchema;
    order.push(key);
    const branches = (child.oneOf ?? child.anyOf) as JsonSchema[] | undefined;
    if (Array.isArray(branches)) {
      // One uiSchema serves every branch of a union of objects: merge theirs.
      ui[key] = Object.assign({}, ...branches.map((b) => withoutOrder(uiSchemaFor(b))));
    } else if (child.const !== undefined) {
      ui[key] = { "ui:widget": "hidden" }; // a union's tag: chosen with the union's selector
    } else if (isSecret(child)) {
      ui[key] = { "ui:widget": "password", "ui:placeholder": "write-only: leave empty to keep" };
    } else if (isFieldPath(child)) {
      ui[key] = FIELD_PATH_FIELD;
    } else if (isFreeJson(child)) {
      ui[key] = JSON_FIELD;
    } else if (child.type === "object") {
      // A Kafka stage's SASL / TLS settings fold away until used (builder/SecurityField.tsx).
      ui[key] = key === "security" ? { ...uiSchemaFor(child), "ui:field": "security" } : uiSchemaFor(child);
    } else if (child.type === "array" && isPlainObject(child.items) && isFreeJson(child.items)) {
      ui[key] = JSON_FIELD;
    } else if (
      child.type === "array" &&
      isPlainObject(child.items) &&
      child.items.type === "string" &&
      !child.items.enum
    ) {
      ui[key] = STRING_LIST_FIELD;
    }
  }
  const required = new Set((schema.required as string[] | undefined) ?? []);
  ui["ui:order"] = [...order.filter((k) => required.has(k)), ...order.filter((k) => !required.has(k))];
  return ui;
}

function withoutOrder(ui: UiSchema): UiSchema {
  const { "ui:order": _order, ...rest } = ui;
  void _order;
  return rest;
}

/** A config without empty optional values the form leaves behind (undefined, "" secrets). */
export function cleanConfig(config: unknown): unknown {
  if (Array.isArray(config)) return config.map(cleanConfig);
  if (!isPlainObject(config)) return config;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined) continue;
    out[key] = cleanConfig(value);
  }
  return out;
}
