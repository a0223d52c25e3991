import type { Plugin, PluginKind } from "../api/types";

export const KINDS: PluginKind[] = ["source", "transform", "sink"];
export const KIND_TITLES: Record<PluginKind, string> = {
  source: "Sources",
  transform: "Transforms",
  sink: "Sinks",
};
export const DRAG_TYPE = "application/x-sluice-plugin";

/** The rule of a bus, offered beside the plugins (the canvas also adds one when a chain forks). */
export const RULE_ITEM = {
  kind: "rule" as const,
  type: "rule",
  title: "Rule",
  description:
    "Route to many targets: the events its pattern matches go to its sinks. Connect it from the end of the shared chain.",
};

export const pluginKey = (kind: string, type: string) => `${kind}/${type}`;

export function pluginIndex(plugins: Plugin[] | undefined): Map<string, Plugin> {
  return new Map((plugins ?? []).map((p) => [pluginKey(p.kind, p.type), p]));
}

/** Plugins whose type, title or description mention every word of the query. */
export function searchPlugins<T extends Pick<Plugin, "type" | "title" | "description">>(
  plugins: T[],
  query: string,
): T[] {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return plugins.filter((p) => {
    const text = `${p.type} ${p.title} ${p.description}`.toLowerCase();
    return words.every((w) => text.includes(w));
  });
}
