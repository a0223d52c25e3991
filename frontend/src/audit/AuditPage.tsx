import { Fragment, useEffect, useState } from "react";

import { href } from "../router";
import { Time } from "../ui/Time";
import { ACTIONS, type AuditEvent, type AuditFilters, DEFAULT_AUDIT, outcomeText, useAudit } from "./audit";
import "./audit.css";

/** The audit trail: who changed or operated what, when, from where, and the outcome; paged,
 * filtered by channel, user and action. Read-only for every role that may see it. */
export function AuditPage() {
  const [filters, setFilters] = useState<AuditFilters>(DEFAULT_AUDIT);
  const [typed, setTyped] = useState({ channel: "", user: "" });
  const [open, setOpen] = useState<number | null>(null);
  const page = useAudit(filters);
  const rows = page.data?.results ?? [];
  const count = page.data?.count ?? 0;

  // Typing filters after a pause: one request, not one per key.
  useEffect(() => {
    const timer = window.setTimeout(
      () =>
        setFilters((f) => (f.channel === typed.channel && f.user === typed.user ? f : { ...f, ...typed, offset: 0 })),
      300,
    );
    return () => window.clearTimeout(timer);
  }, [typed]);

  const error = page.error as Error | null;
  const first = count === 0 ? 0 : filters.offset + 1;
  const last = filters.offset + rows.length;
  return (
    <div className="stack audit-page">
      <div className="section-head">
        <h1>
          Audit trail{" "}
          <span className="muted small" data-testid="audit-count">
            {count.toLocaleString("en")}
          </span>
        </h1>
      </div>
      <p className="small muted">
        Every change and operation made through the API, the console and the admin (refused ones included), and every
        sign-in: who, what, when, from where and the outcome. Newest first.
      </p>
      <div className="audit-filters" role="search">
        <input
          type="search"
          aria-label="Filter by channel name"
          placeholder="Channel"
          value={typed.channel}
          onChange={(e) => setTyped({ ...typed, channel: e.target.value })}
          data-testid="audit-channel"
        />
        <input
          type="search"
          aria-label="Filter by user name"
          placeholder="User"
          value={typed.user}
          onChange={(e) => setTyped({ ...typed, user: e.target.value })}
          data-testid="audit-user"
        />
        <select
          aria-label="Filter by action"
          value={filters.action}
          onChange={(e) => setFilters({ ...filters, action: e.target.value, offset: 0 })}
          data-testid="audit-action"
        >
          <option value="">Any action</option>
          {ACTIONS.map((action) => (
            <option key={action} value={action}>
              {action.endsWith(".") ? `${action}*` : action}
            </option>
          ))}
        </select>
      </div>
      {error && (
        <p className="error small" role="alert">
          Could not read the audit trail: {error.message}
        </p>
      )}
      <table className="table audit" aria-busy={page.isFetching}>
        <thead>
          <tr>
            <th>When</th>
            <th>Who</th>
            <th>Action</th>
            <th>Object</th>
            <th>Outcome</th>
            <th>From</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((event) => (
            <Fragment key={event.id}>
              <AuditRow
                event={event}
                open={open === event.id}
                onToggle={() => setOpen(open === event.id ? null : event.id)}
              />
              {open === event.id && (
                <tr className="audit-detail">
                  <td colSpan={6}>
                    <dl className="small">
                      <dt>User agent</dt>
                      <dd>{event.user_agent || "—"}</dd>
                      <dt>Request body (secrets redacted)</dt>
                      <dd>
                        <pre className="tail-event">
                          {event.changes === null ? "—" : JSON.stringify(event.changes, null, 2)}
                        </pre>
                      </dd>
                    </dl>
                  </td>
                </tr>
              )}
            </Fragment>
          ))}
          {!page.isPending && rows.length === 0 && (
            <tr>
              <td colSpan={6} className="muted">
                {filters.channel || filters.user || filters.action
                  ? "Nothing matches these filters."
                  : "Nothing recorded yet."}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <nav className="pager" aria-label="Pages of the audit trail">
        <button
          type="button"
          disabled={filters.offset === 0}
          onClick={() => setFilters({ ...filters, offset: Math.max(0, filters.offset - filters.limit) })}
        >
          ‹ Newer
        </button>
        <span className="small" data-testid="audit-range">
          {first.toLocaleString("en")}–{last.toLocaleString("en")} of {count.toLocaleString("en")}
        </span>
        <button
          type="button"
          disabled={last >= count}
          onClick={() => setFilters({ ...filters, offset: filters.offset + filters.limit })}
          data-testid="audit-older"
        >
          Older ›
        </button>
      </nav>
    </div>
  );
}

function AuditRow({ event, open, onToggle }: { event: AuditEvent; open: boolean; onToggle: () => void }) {
  const outcome = outcomeText(event.outcome);
  const isChannel = event.object_type === "channel" && event.object_id;
  return (
    <tr data-testid="audit-row">
      <td>
        <button type="button" className="link" aria-expanded={open} onClick={onToggle} title="Show the request">
          {open ? "▾" : "▸"} <Time iso={event.created_at} />
        </button>
      </td>
      <td>{event.actor}</td>
      <td>
        <code>{event.action}</code>
      </td>
      <td className="ellipsis">
        {isChannel ? (
          <a href={href({ page: "channel", name: event.object_id })}>{event.object_id}</a>
        ) : (
          [event.object_type, event.object_id].filter(Boolean).join(" ") || "—"
        )}
      </td>
      <td className={`outcome ${outcome.tone}`}>{outcome.text}</td>
      <td className="small">
        {event.via || "—"}
        {event.remote_addr ? ` · ${event.remote_addr}` : ""}
      </td>
    </tr>
  );
}
