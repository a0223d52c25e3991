import type { ChannelStatus } from "../api/types";

type Health = ChannelStatus["health"];

const LEVEL_RANK: Record<string, number> = { critical: 0, warning: 1, ok: 2, idle: 3 };

/** Worst first: by level (critical, warning, ok, idle), then by score; no health last. */
export function healthRank(health: Health | undefined): number {
  if (!health) return 1000;
  return (LEVEL_RANK[health.level] ?? 4) * 101 + health.score;
}

/** A channel's health: its level and score, the explanation on hover (title). */
export function HealthBadge({ health }: { health: Health | undefined }) {
  if (!health) return <span className="muted">—</span>;
  return (
    <span
      className={`badge health-${health.level}`}
      title={health.explanation}
      aria-label={`Health ${health.level} (${health.score}): ${health.explanation}`}
      data-testid="health-badge"
    >
      {health.level} {health.level === "idle" ? "" : health.score}
    </span>
  );
}
