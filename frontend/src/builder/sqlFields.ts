/**
 * The event fields a `sql` transform's expressions read, for the builder's "unknown field"
 * warning: Spark's VARIANT paths on `data` (`data:order.id::string`, `data:items[0].sku`,
 * `data:['odd key']`) and `variant_get` / `try_variant_get` of `data` with a literal JSONPath.
 *
 * The browser has no SQL library, so this is a small tokenizer of Spark SQL's lexical rules
 * (quoted strings with escapes and doubled quotes, raw strings `r'…'`, back-quoted names,
 * numbers, comments, `::`), not a pattern search: a `data:x` inside a string literal or a
 * comment is not a field, and `s.data:x` (a struct's member) is not the event's data. The
 * server checks the expressions themselves (pipelines/spec/sql_expressions.py, sqlglot).
 */

import { jsonPathToField } from "./shape";

export type TokenKind = "name" | "quoted-name" | "string" | "number" | "op";

export interface Token {
  kind: TokenKind;
  /** A name's or string's value (quotes and escapes removed), else the text. */
  text: string;
}

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const TWO_CHAR_OPS = new Set(["::", "->", "=>", "<=", ">=", "<>", "!=", "==", "||", "<<", ">>"]);

/** Spark SQL's tokens of `text` (whitespace and comments dropped). An unterminated string
 * or name ends the text (the server reports it). */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (text.startsWith("--", i)) {
      const end = text.indexOf("\n", i);
      i = end < 0 ? text.length : end + 1;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if ((c === "r" || c === "R") && (text[i + 1] === "'" || text[i + 1] === '"')) {
      const [value, next] = quoted(text, i + 1, false);
      tokens.push({ kind: "string", text: value });
      i = next;
    } else if (c === "'" || c === '"') {
      const [value, next] = quoted(text, i, true);
      tokens.push({ kind: "string", text: value });
      i = next;
    } else if (c === "`") {
      const [value, next] = quoted(text, i, false);
      tokens.push({ kind: "quoted-name", text: value });
      i = next;
    } else if (DIGIT.test(c) || (c === "." && DIGIT.test(text[i + 1] ?? ""))) {
      let j = i;
      while (j < text.length && /[0-9.]/.test(text[j]!)) j++;
      if (/[eE]/.test(text[j] ?? "") && /[-+0-9]/.test(text[j + 1] ?? "")) {
        j += 2;
        while (j < text.length && DIGIT.test(text[j]!)) j++;
      }
      while (j < text.length && NAME_PART.test(text[j]!)) j++; // suffixes: 1L, 2.5BD
      tokens.push({ kind: "number", text: text.slice(i, j) });
      i = j;
    } else if (NAME_START.test(c)) {
      let j = i;
      while (j < text.length && NAME_PART.test(text[j]!)) j++;
      tokens.push({ kind: "name", text: text.slice(i, j) });
      i = j;
    } else {
      const two = text.slice(i, i + 2);
      const op = TWO_CHAR_OPS.has(two) ? two : c;
      tokens.push({ kind: "op", text: op });
      i += op.length;
    }
  }
  return tokens;
}

/** A quoted string or name from `start` (its opening quote): its value and the index after
 * it. A doubled quote is one quote; `escapes`: a backslash escapes the next character. */
function quoted(text: string, start: number, escapes: boolean): [string, number] {
  const quote = text[start]!;
  let value = "";
  let i = start + 1;
  while (i < text.length) {
    const c = text[i]!;
    if (escapes && c === "\\" && i + 1 < text.length) {
      value += text[i + 1];
      i += 2;
    } else if (c === quote && text[i + 1] === quote) {
      value += quote;
      i += 2;
    } else if (c === quote) {
      return [value, i + 1];
    } else {
      value += c;
      i++;
    }
  }
  return [value, text.length];
}

const VARIANT_GETTERS = new Set(["variant_get", "try_variant_get"]);

/** The field paths (`data.order.id`, array indexes matched through) the expressions read. */
export function sqlFieldPaths(expressions: string[]): string[] {
  const paths: string[] = [];
  for (const expression of expressions) {
    const tokens = tokenize(expression);
    tokens.forEach((token, i) => {
      const before = tokens[i - 1];
      if (!isData(token) || (before?.kind === "op" && before.text === ".")) return;
      const next = tokens[i + 1];
      if (next?.kind === "op" && next.text === ":") {
        const path = variantPath(tokens, i + 2);
        if (path.length) paths.push(["data", ...path].join("."));
        return;
      }
      // variant_get(data, '$.a.b', ...)
      const call = tokens[i - 2];
      if (
        before?.kind === "op" &&
        before.text === "(" &&
        call?.kind === "name" &&
        VARIANT_GETTERS.has(call.text.toLowerCase()) &&
        next?.kind === "op" &&
        next.text === ","
      ) {
        const literal = tokens[i + 2];
        const field = literal?.kind === "string" ? jsonPathToField(literal.text) : null;
        if (field) paths.push(`data.${field}`);
      }
    });
  }
  return [...new Set(paths)];
}

function isData(token: Token): boolean {
  return (token.kind === "name" || token.kind === "quoted-name") && token.text.toLowerCase() === "data";
}

/** The keys of a VARIANT path starting at `tokens[start]`: `a.b`, `` `a b` ``, `['k']`,
 * `[0]` (an index: matched through, not a key); it ends at the first other token. */
function variantPath(tokens: Token[], start: number): string[] {
  const keys: string[] = [];
  let i = start;
  let expectKey = true; // the first step is a bare key
  while (i < tokens.length) {
    const token = tokens[i]!;
    if (expectKey && (token.kind === "name" || token.kind === "quoted-name")) {
      keys.push(token.text);
      expectKey = false;
      i++;
    } else if (!expectKey && token.kind === "op" && token.text === ".") {
      expectKey = true;
      i++;
    } else if (token.kind === "op" && token.text === "[") {
      const inside = tokens[i + 1];
      const close = tokens[i + 2];
      if (!(close?.kind === "op" && close.text === "]")) break;
      if (inside?.kind === "string") keys.push(inside.text);
      else if (!(inside?.kind === "number" || (inside?.kind === "op" && inside.text === "*"))) break;
      expectKey = false;
      i += 3;
    } else {
      break;
    }
  }
  return keys;
}
