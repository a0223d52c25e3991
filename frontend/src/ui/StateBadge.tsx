import type { ConnectorState, ShownState } from "../api/types";

/** A state as a coloured badge; NOT_REPORTING reads "not reporting", with `title` (since when)
 * on hover. */
export function StateBadge({
  state,
  title,
}: {
  state: ShownState | ConnectorState | string | null | undefined;
  title?: string;
}) {
  const value = state ?? "—";
  const label = value === "NOT_REPORTING" ? "NOT REPORTING" : value;
  return (
    <span
      className={`badge state-${String(value).toLowerCase()}`}
      data-testid="state-badge"
      title={title || undefined}
      aria-label={title ? `${label}: ${title}` : undefined}
    >
      {label}
    </span>
  );
}
