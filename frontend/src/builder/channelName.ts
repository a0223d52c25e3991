/** The channel-name rule, checked as the name is typed (the server's CHANNEL_NAME_PATTERN in
 * console/models.py: ^[a-z0-9][a-z0-9_-]{0,62}$), each problem said in words. */

const MAX = 63;

/** What is wrong with ``name`` ("" when nothing is; an empty name only once it must be given). */
export function channelNameProblem(name: string, required = false): string {
  if (name === "") return required ? "Give the channel a name." : "";
  if (name.length > MAX) return `At most ${MAX} characters (this one has ${name.length}).`;
  if (/[A-Z]/.test(name)) return "Lower-case only: use " + JSON.stringify(name.toLowerCase()) + ".";
  if (/\s/.test(name)) return "No spaces: use '-' or '_' between words.";
  const bad = [...new Set(name.replace(/[a-z0-9_-]/g, ""))];
  if (bad.length > 0)
    return `Not allowed: ${bad.map((c) => JSON.stringify(c)).join(", ")}. Use lower-case letters, digits, '-' and '_'.`;
  if (!/^[a-z0-9]/.test(name)) return "Start with a lower-case letter or a digit.";
  return "";
}

/** Where the problems of a refused save are, in words (instead of "marked on the canvas"
 * when some are beside the name, in the side panel or under the toolbar). */
export function saveProblemsText(where: { name: boolean; stages: number; settings: number; other: number }): string {
  const parts: string[] = [];
  if (where.name) parts.push("the name (see beside it)");
  if (where.stages > 0)
    parts.push(`${where.stages} stage${where.stages === 1 ? "" : "s"} (marked in red on the canvas)`);
  if (where.settings > 0) parts.push("the channel settings (in the side panel)");
  if (where.other > 0) parts.push("the spec (listed below)");
  return parts.length > 0 ? `Not saved: check ${parts.join(", ")}.` : "Not saved.";
}

/** The names a copy of ``name`` may take, in order: name-copy, name-copy-2, name-copy-3, … each
 * cut to the 63 characters a name may have. */
export function* copyNames(name: string): Generator<string> {
  for (let n = 1; ; n++) {
    const suffix = n === 1 ? "-copy" : `-copy-${n}`;
    yield `${name.slice(0, MAX - suffix.length)}${suffix}`;
  }
}

/** Said beside the name of a saved channel, which the server does not rename. */
export const FIXED_NAME_NOTE = "A saved channel keeps its name; Export then Import as a copy to rename it.";
