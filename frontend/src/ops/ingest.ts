/** Pure helpers of the HTTP ingestion panel. */

export type RateLimitDraft = { ok: true; limit: number | null } | { ok: false; error: string };

/** The rate limit typed into the panel: empty means the site default, else a whole number ≥ 1. */
export function parseRateLimit(text: string): RateLimitDraft {
  const trimmed = text.trim();
  if (trimmed === "") return { ok: true, limit: null };
  if (!/^\d+$/.test(trimmed))
    return { ok: false, error: "A whole number of events per second, or empty for the default." };
  const limit = Number(trimmed);
  if (limit < 1) return { ok: false, error: "At least 1 event per second (empty for the default)." };
  return { ok: true, limit };
}

/** A ready-to-run curl command that sends one CloudEvent with the token. */
export function curlExample(origin: string, channel: string, token: string): string {
  const url = `${origin}/api/v1/channels/${encodeURIComponent(channel)}/events`;
  const event = JSON.stringify({ specversion: "1.0", id: "1", source: "/example", type: "example.created", data: {} });
  return [
    `curl -s ${url} \\`,
    `  -H "Authorization: Bearer ${token}" \\`,
    `  -H "Content-Type: application/cloudevents+json" \\`,
    `  -d '${event}'`,
  ].join("\n");
}
