/** Import and export of a channel as JSON ({name, description, spec}), linear or a bus. */

import type { ChannelSpec, Rule } from "../api/types";
import { isPlainObject } from "../graph/spec";
import { channelNameProblem, copyNames } from "./channelName";

export interface ChannelFile {
  name: string;
  description: string;
  spec: ChannelSpec;
}

/**
 * Read an exported channel (or a bare spec); throws with a readable message. A bus's rules
 * are read as far as the canvas needs them (each an object with a name and a list of sinks);
 * the server checks the rest when the channel is saved.
 */
export function parseChannelFile(text: string): ChannelFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`Not JSON: ${(error as Error).message}`, { cause: error });
  }
  if (!isPlainObject(value)) throw new Error("Expected a JSON object.");
  const spec = isPlainObject(value.spec) ? value.spec : value;
  const hasRules = Array.isArray(spec.rules);
  if (!isPlainObject(spec.source) || (!isPlainObject(spec.sink) && !hasRules))
    throw new Error("A channel spec needs a source and a sink (or rules, for a bus).");
  if (isPlainObject(spec.sink) && hasRules) throw new Error("A channel spec has a sink or rules, not both.");
  const transforms = Array.isArray(spec.transforms) ? spec.transforms : [];
  const out = { ...(spec as unknown as ChannelSpec), transforms } as ChannelSpec;
  if (hasRules) out.rules = readRules(spec.rules as unknown[]);
  return {
    name: typeof value.name === "string" ? value.name : "",
    description: typeof value.description === "string" ? value.description : "",
    spec: out,
  };
}

function readRules(rules: unknown[]): Rule[] {
  if (rules.length === 0) throw new Error("A bus needs at least one rule.");
  return rules.map((rule, index) => {
    if (!isPlainObject(rule) || typeof rule.name !== "string") throw new Error(`rules[${index}] needs a name.`);
    if (!Array.isArray(rule.sinks) || rule.sinks.length === 0 || !rule.sinks.every(isPlainObject))
      throw new Error(`rules[${index}] (${rule.name}) needs a list of sinks.`);
    const transforms = Array.isArray(rule.transforms) ? rule.transforms : [];
    return { ...(rule as unknown as Rule), transforms };
  });
}

/** The channel an import becomes: ``name``, and whether a channel of that name exists (then
 * saving replaces its spec: a new revision of it). */
export interface ImportTarget {
  name: string;
  exists: boolean;
}

/** How many copy names are tried before the name is left to the user. */
const COPY_NAMES_TRIED = 20;

/**
 * The name an imported channel takes. A file whose name no channel has (or that has none) keeps
 * it: a new channel. A file named after a channel that exists asks (``ask``: the question and
 * a proposal; null: cancel) with the first free copy name offered (orders-copy, orders-copy-2,
 * …): another name must be valid and free (else it asks again, saying why); the file's own name
 * replaces that channel's spec on save. Null: the import is cancelled.
 */
export async function chooseImportName(
  name: string,
  exists: (name: string) => Promise<boolean>,
  ask: (question: string, proposal: string) => string | null,
): Promise<ImportTarget | null> {
  if (name === "" || !(await exists(name))) return { name, exists: false };
  let proposal = "";
  let tried = 0;
  for (const candidate of copyNames(name)) {
    if (tried++ >= COPY_NAMES_TRIED) break;
    if (!(await exists(candidate))) {
      proposal = candidate;
      break;
    }
  }
  let question =
    `A channel named “${name}” exists. Import as a copy, a new channel named:\n` +
    `(keep “${name}” to replace that channel's spec when you save)`;
  for (;;) {
    const answer = ask(question, proposal)?.trim();
    if (answer === undefined) return null;
    if (answer === name) return { name, exists: true };
    const problem = channelNameProblem(answer, true) || ((await exists(answer)) ? `“${answer}” is taken too.` : "");
    if (problem === "") return { name: answer, exists: false };
    question = `${problem} Name the copy:`;
    proposal = answer;
  }
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
