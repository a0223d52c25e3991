/**
 * The server's validation errors on the canvas: a path such as
 * "spec.rules[2].sinks[1].config.topic" names a stage of the spec (here "rules[2].sinks[1]")
 * and a field inside it ("topic"); graphToSpec says which canvas node each stage came from.
 */

import { isPlainObject } from "./util";

export interface ErrorTarget {
  /**
   * The stage's path in the spec ("source", "sink", "transforms[1]", "rules[2]" for a rule's own
   * fields, "rules[2].transforms[0]", "rules[2].sinks[1]"), "errors" for the error policy, or
   * null when the path is about no stage ("name", "spec.runtime.mode", "spec.rules").
   */
  stage: string | null;
  /**
   * The path inside the stage's config ("pattern", "security.password"), "" for the stage
   * itself (its type, e.g. one the channel's execution mode cannot run). For a rule: the
   * rule's field ("name", "pattern", "enabled", "description") or "" (its sinks, as a list).
   */
  field: string;
}

const STAGE = /^(source|sink|errors|transforms\[\d+\]|rules\[\d+\](?:\.(?:transforms|sinks)\[\d+\])?)(?:\.(.*))?$/;
const RULE = /^rules\[\d+\]$/;
/** The fields of a rule the rule's own form shows. */
export const RULE_FIELDS = ["name", "description", "enabled", "pattern"];

/** Where a server error path ("spec.transforms[1].config.pattern") points. */
export function parseErrorPath(path: string): ErrorTarget {
  const rest = path.replace(/^spec\./, "");
  const match = rest.match(STAGE);
  if (!match) return { stage: null, field: rest };
  const stage = match[1]!;
  const tail = match[2] ?? "";
  if (stage === "errors") return { stage, field: tail };
  if (RULE.test(stage)) {
    const head = tail.split(".")[0]!;
    return { stage, field: RULE_FIELDS.includes(head) ? head : "" };
  }
  const config = tail.match(/^config(?:\.(.*))?$/);
  return { stage, field: config ? (config[1] ?? "") : "" };
}

/**
 * Group server errors by canvas node id (and field): ``stages`` maps each stage path of the
 * saved spec to its node (graphToSpec's ``stages``); the rest are the channel's own.
 */
export function errorsByNode(
  errors: Record<string, string[]>,
  stages: Record<string, string>,
  configs: Record<string, unknown> = {},
): { nodes: Record<string, Record<string, string[]>>; other: Record<string, string[]> } {
  const nodes: Record<string, Record<string, string[]>> = {};
  const other: Record<string, string[]> = {};
  for (const [path, messages] of Object.entries(errors)) {
    const { stage, field } = parseErrorPath(path);
    const nodeId = stage === null || stage === "errors" ? undefined : stages[stage];
    if (nodeId === undefined) {
      other[path] = messages;
      continue;
    }
    const forNode = (nodes[nodeId] ??= {});
    const aligned = alignErrorPath(field, configs[nodeId]);
    forNode[aligned] = [...(forNode[aligned] ?? []), ...messages];
  }
  return { nodes, other };
}

/**
 * A server error path inside a config, re-aligned with the config: pydantic names the branch
 * of a tagged union in its paths ("auth.basic.username" for auth = {type: "basic", …}), the
 * form does not ("auth.username").
 */
export function alignErrorPath(path: string, config: unknown): string {
  const parts = path.split(".").filter(Boolean);
  const out: string[] = [];
  let cursor: unknown = config;
  for (const part of parts) {
    if (isPlainObject(cursor) && !(part in cursor) && cursor.type === part) continue;
    out.push(part);
    const key = part.replace(/\[\d+\]$/, "");
    cursor = isPlainObject(cursor) ? cursor[key] : undefined;
  }
  return out.join(".");
}

/** Messages keyed by config path → rjsf extraErrors ({pattern: {__errors: […]}}). */
export function toFormErrors(fields: Record<string, string[]>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [path, messages] of Object.entries(fields)) {
    const parts = path
      .replace(/\[(\d+)\]/g, ".$1")
      .split(".")
      .filter(Boolean);
    let cursor = root;
    for (const part of parts) {
      cursor = (cursor[part] ??= {}) as Record<string, unknown>;
    }
    const existing = (cursor.__errors as string[] | undefined) ?? [];
    cursor.__errors = [...existing, ...messages];
  }
  return root;
}
