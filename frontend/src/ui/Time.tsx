import { ago, fmtTime } from "./format";

/** An instant as the console shows it everywhere: relative ("3 min ago") where recency is the
 * point, absolute ("2026-11-30 07:30:23") otherwise; either way the absolute time is in the
 * tooltip and the machine-readable instant in `dateTime`. */
export function Time({ iso, relative = false }: { iso: string | null | undefined; relative?: boolean }) {
  if (!iso) return <>—</>;
  const absolute = fmtTime(iso);
  return (
    <time dateTime={iso} title={absolute}>
      {relative ? ago(iso) : absolute}
    </time>
  );
}
