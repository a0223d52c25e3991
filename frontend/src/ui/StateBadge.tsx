import type { ConnectorState } from "../api/types";

export function StateBadge({ state }: { state: ConnectorState | string | null | undefined }) {
  const value = state ?? "—";
  return (
    <span className={`badge state-${String(value).toLowerCase()}`} data-testid="state-badge">
      {value}
    </span>
  );
}
