/** Reading what is typed in a JSON field whose schema may also take plain text. */

import { TEXT_TOO } from "../graph/schema";

type Schema = { type?: unknown; anyOf?: unknown; oneOf?: unknown; [TEXT_TOO]?: unknown };

/** Whether ``schema`` takes a string (its type, one of its anyOf / oneOf options, or the mark
 * a union simplified into free JSON keeps: graph/schema.ts). */
export function acceptsText(schema: Schema | undefined): boolean {
  if (!schema || typeof schema !== "object") return false;
  if (schema[TEXT_TOO] === true) return true;
  const type = schema.type;
  if (type === "string" || (Array.isArray(type) && type.includes("string"))) return true;
  const options = [schema.anyOf, schema.oneOf].flatMap((o) => (Array.isArray(o) ? (o as Schema[]) : []));
  return options.some((option) => acceptsText(option));
}

export type Reading = { value: unknown } | { error: string };

/** The value of what was typed: JSON, or, where the schema takes text, the text itself
 * (`earliest` need not be typed `"earliest"`). */
export function readTyped(text: string, schema: Schema | undefined): Reading {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    const trimmed = text.trim();
    if (acceptsText(schema) && !/^[[{"]/.test(trimmed)) return { value: trimmed };
    return { error: `Not valid JSON yet: ${(error as Error).message}` };
  }
}

/** How a value is shown: a plain string as itself where the schema takes text, else JSON. */
export function shownText(value: unknown, schema: Schema | undefined): string {
  if (value === undefined) return "";
  if (typeof value === "string" && acceptsText(schema)) return value;
  return JSON.stringify(value, null, 2);
}
