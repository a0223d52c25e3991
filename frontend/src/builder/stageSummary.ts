/** The setting that tells two stages of one type apart on the canvas (a Kafka stage's topic,
 * an HTTP sink's host, a JDBC sink's table); empty when there is none yet. */
export function stageSummary(type: string, config: Record<string, unknown> | undefined): string {
  const c = config ?? {};
  const text = (value: unknown) => (typeof value === "string" ? value.trim() : "");
  let summary = "";
  switch (type) {
    case "kafka":
      summary = Array.isArray(c.topics)
        ? c.topics.filter((t) => typeof t === "string").join(", ")
        : text(c.topic) || text(c.topic_pattern);
      break;
    case "http":
      summary = host(text(c.url));
      break;
    case "jdbc":
      summary = text(c.table);
      break;
    case "files":
      summary = text(c.path);
      break;
  }
  return summary.length > 40 ? `${summary.slice(0, 39)}…` : summary;
}

function host(url: string): string {
  try {
    return url ? new URL(url).host : "";
  } catch {
    return "";
  }
}
