/** Number and time formatting shared by the operations views. */

import type { ChannelStatus, ConnectorState } from "../api/types";

export function totalLag(status: ChannelStatus | undefined): number | null {
  if (!status) return null;
  const lags = status.tasks.map((t) => t.lag).filter((lag): lag is number => lag !== null);
  return lags.length === 0 ? null : lags.reduce((a, b) => a + b, 0);
}

export function fmtNumber(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined) return "—";
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

const pad2 = (n: number) => String(n).padStart(2, "0");

/** An instant as the console's one absolute format, in the browser's time zone, 24-hour:
 * "2026-11-30 07:30:23". Year first so it reads the same in every locale and sorts as text;
 * "—" when unknown or unparsable. */
export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "—";
  return (
    `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ` +
    `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`
  );
}

/** How long ago an instant was: "12 s ago", "3 min ago", "2 h ago", "4 d ago" ("—" when
 * unknown). An instant slightly ahead of the browser's clock (skew) reads "just now". Always
 * shown with `fmtTime` in a tooltip (ui/Time.tsx), so the exact moment is one hover away. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "—";
  const at = new Date(iso).getTime();
  if (Number.isNaN(at)) return "—";
  const seconds = Math.round((now - at) / 1000);
  if (seconds < 1) return "just now";
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

const RANK: Record<string, number> = {
  FAILED: 0,
  NOT_REPORTING: 1,
  RESTARTING: 2,
  UNASSIGNED: 3,
  RUNNING: 4,
  PAUSED: 5,
  STOPPED: 6,
};

/** Failures first, then by name. */
export function stateRank(state: ConnectorState | string): number {
  return RANK[state] ?? 7;
}

/** A heartbeat age in seconds as "4s", "3m", "2h" ("—" when unknown). */
export function fmtAge(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  return `${Math.floor(s / 3600)}h`;
}

/** Mebibytes as "512 MiB" or "7.5 GiB". */
export function fmtMiB(mib: number | null | undefined): string {
  if (mib === null || mib === undefined) return "—";
  return mib >= 1024 ? `${(mib / 1024).toFixed(1)} GiB` : `${Math.round(mib)} MiB`;
}

/** A Spark memory setting ("1g", "512m", "2048k") as "1 GiB", "512 MiB"; other text as is. */
export function fmtSparkMemory(value: string | null | undefined): string {
  if (!value) return "—";
  const match = value.trim().match(/^(\d+(?:\.\d+)?)\s*([kmgt])b?$/i);
  if (!match) return value;
  const factor: Record<string, number> = { k: 1 / 1024, m: 1, g: 1024, t: 1024 * 1024 };
  const mib = Number(match[1]) * factor[match[2]!.toLowerCase()]!;
  return mib >= 1024 && mib % 1024 === 0 ? `${mib / 1024} GiB` : fmtMiB(mib);
}
