import { useEffect, useMemo, useState } from "react";

import { useChannelAction } from "../api/hooks";
import type { Channel } from "../api/types";
import { href } from "../router";
import { useCan } from "../ui/permissions";
import { StateBadge } from "../ui/StateBadge";
import { fmtNumber, totalLag } from "../ui/format";
import { liveEventsPerSecond, notReportingText } from "./channelView";
import { FleetActions } from "./FleetActions";
import {
  ariaSort,
  bulkFilter,
  DEFAULT_PARAMS,
  type FleetParams,
  nextOrdering,
  PAGE_SIZES,
  rangeText,
  type SortKey,
  useChannelsPage,
} from "./fleet";
import { HealthBadge } from "./HealthBadge";
import "./fleet.css";

const DEMO = "demo-orders";

/** The fleet, one page at a time from the server: search, filters, sort headers, paging, and
 * actions on a selection (or on every matching channel) in one bulk request. */
export function ChannelsPage() {
  const [params, setParams] = useState<FleetParams>(DEFAULT_PARAMS);
  const [searchText, setSearchText] = useState("");
  const [labelText, setLabelText] = useState("");
  const page = useChannelsPage(params);
  const rows = useMemo(() => page.data?.results ?? [], [page.data]);
  const count = page.data?.count ?? 0;
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [allMatching, setAllMatching] = useState(false);
  const [messages, setMessages] = useState<string[]>([]);
  const edit = useCan("edit");

  // Typing filters the list after a pause (one request, not one per key).
  useEffect(() => {
    const timer = window.setTimeout(
      () =>
        setParams((current) =>
          current.search === searchText && current.labels === labelText
            ? current
            : { ...current, search: searchText, labels: labelText, offset: 0 },
        ),
      250,
    );
    return () => window.clearTimeout(timer);
  }, [searchText, labelText]);

  const change = (patch: Partial<FleetParams>) => {
    setParams((current) => ({ ...current, offset: 0, ...patch }));
    setSelected(new Set());
    setAllMatching(false);
  };
  const chosen = rows.filter((c) => selected.has(c.name));
  const toggle = (name: string) => {
    setAllMatching(false);
    setSelected((current) => {
      const next = new Set(current);
      if (next.has(name)) next.delete(name);
      else next.add(name);
      return next;
    });
  };
  const header = (key: SortKey, label: string, className?: string) => (
    <th aria-sort={ariaSort(params.ordering, key)} className={className}>
      <button
        type="button"
        className="link sort"
        data-testid={`sort-${key}`}
        title="Sort (click again: reverse, a third time: failures first, then by name)"
        onClick={() => change({ ordering: nextOrdering(params.ordering, key) })}
      >
        {label}
        {params.ordering === key ? " ▲" : params.ordering === `-${key}` ? " ▼" : ""}
      </button>
    </th>
  );
  const error = page.error as Error | null;

  return (
    <div className="stack">
      <Welcome channels={rows} loading={page.isPending || count > rows.length} />
      <div className="section-head">
        <h1>
          Channels <span className="muted small" data-testid="channel-count">{count.toLocaleString("en")}</span>
        </h1>
        {edit.allowed ? (
          <a className="button primary" href={href({ page: "build", name: null })}>
            New channel
          </a>
        ) : (
          <button type="button" className="primary" disabled title={edit.reason}>
            New channel
          </button>
        )}
      </div>
      <div className="fleet-filters" role="search">
        <input
          type="search"
          aria-label="Search channels by name or description"
          placeholder="Search name or description"
          value={searchText}
          onChange={(e) => setSearchText(e.target.value)}
          data-testid="fleet-search"
        />
        <MultiSelect
          label="State"
          options={STATES}
          value={params.states}
          onChange={(states) => change({ states })}
        />
        <MultiSelect
          label="Health"
          options={HEALTHS}
          value={params.healths}
          onChange={(healths) => change({ healths })}
        />
        <input
          type="text"
          aria-label="Filter by labels (key=value or key, comma-separated)"
          placeholder="Labels: team=payments, tier"
          value={labelText}
          onChange={(e) => setLabelText(e.target.value)}
          data-testid="fleet-labels"
        />
      </div>
      <div className="bulk">
        <span className="muted small" data-testid="selection">
          {allMatching ? `All ${count.toLocaleString("en")} matching selected` : `${chosen.length} selected`}
        </span>
        {!allMatching && chosen.length > 0 && chosen.length === rows.length && count > rows.length && (
          <button type="button" className="link small" onClick={() => setAllMatching(true)}>
            Select all {count.toLocaleString("en")} matching
          </button>
        )}
        <FleetActions
          names={allMatching ? null : chosen.map((c) => c.name)}
          filter={bulkFilter(params)}
          targets={allMatching ? ["RUNNING", "PAUSED", "STOPPED"] : chosen.map((c) => c.target_state)}
          size={allMatching ? count : chosen.length}
          onDone={(lines) => {
            setMessages(lines);
            setSelected(new Set());
            setAllMatching(false);
          }}
        />
        <span className="small muted pager-top">{rangeText(params.offset, rows.length, count)}</span>
      </div>
      {messages.length > 0 && (
        <div role="status" data-testid="bulk-messages">
          <ul className="small">
            {messages.map((m, i) => (
              <li key={`${i}-${m}`} className={i === 0 ? "" : "error"}>
                {m}
              </li>
            ))}
          </ul>
        </div>
      )}
      {error && (
        <p className="error small" role="alert">
          {error.message}
        </p>
      )}
      <table className="table channels" aria-busy={page.isFetching}>
        {/* Widths in fleet.css: the name takes 30 %, the figures fixed widths, narrower below 1,200 px. */}
        <colgroup>
          {COLUMNS.map((column) => (
            <col key={column} className={`col-${column}`} />
          ))}
        </colgroup>
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select all channels on this page"
                checked={rows.length > 0 && chosen.length === rows.length}
                onChange={(e) => {
                  setAllMatching(false);
                  setSelected(e.target.checked ? new Set(rows.map((c) => c.name)) : new Set());
                }}
              />
            </th>
            {header("name", "Name")}
            {header("state", "State")}
            {header("health", "Health")}
            {header("target_state", "Desired state")}
            <th className="num">Events/s</th>
            <th className="num">Lag</th>
            <th className="num">Dead letters</th>
            {header("worker", "Worker")}
            <th>Revision</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((channel) => {
            const status = channel.status;
            return (
              <tr key={channel.name} data-testid={`channel-row-${channel.name}`}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${channel.name}`}
                    checked={allMatching || selected.has(channel.name)}
                    onChange={() => toggle(channel.name)}
                  />
                </td>
                <td>
                  <a className="channel-name" href={href({ page: "channel", name: channel.name })} title={channel.name}>
                    {channel.name}
                  </a>
                  <LabelChips labels={channel.labels} onPick={(l) => setLabelText(l)} />
                  <div className="small muted ellipsis">{channel.description}</div>
                </td>
                <td>
                  <StateBadge state={status?.state ?? channel.state} title={notReportingText(status)} />
                </td>
                <td>
                  <HealthBadge health={status?.health} />
                </td>
                <td>{status?.target_state ?? channel.target_state}</td>
                <td className="num">{fmtNumber(liveEventsPerSecond(status), 1)}</td>
                <td className="num">{fmtNumber(totalLag(status))}</td>
                <td className="num">{fmtNumber(status?.dead_letters)}</td>
                <td className="ellipsis">{status?.worker_id ?? "—"}</td>
                <td>
                  {channel.revision ?? "—"}
                  {channel.drift && (
                    <span className="badge drift" title="The running revision is not the latest saved one">
                      drift
                    </span>
                  )}
                </td>
              </tr>
            );
          })}
          {!page.isPending && rows.length === 0 && (
            <tr>
              <td colSpan={10} className="muted">
                {count === 0 && !params.search && !params.states.length && !params.healths.length && !params.labels
                  ? "No channels yet."
                  : "No channel matches these filters."}
              </td>
            </tr>
          )}
        </tbody>
      </table>
      <nav className="pager" aria-label="Pages of channels">
        <button
          type="button"
          disabled={params.offset === 0}
          onClick={() => setParams((p) => ({ ...p, offset: Math.max(0, p.offset - p.limit) }))}
        >
          ‹ Previous
        </button>
        <span className="small" data-testid="page-range">
          {rangeText(params.offset, rows.length, count)}
        </span>
        <button
          type="button"
          disabled={params.offset + rows.length >= count}
          onClick={() => setParams((p) => ({ ...p, offset: p.offset + p.limit }))}
          data-testid="next-page"
        >
          Next ›
        </button>
        <label className="small">
          Per page{" "}
          <select
            value={params.limit}
            onChange={(e) => change({ limit: Number(e.target.value) })}
            aria-label="Channels per page"
          >
            {PAGE_SIZES.map((size) => (
              <option key={size} value={size}>
                {size}
              </option>
            ))}
          </select>
        </label>
      </nav>
    </div>
  );
}

const COLUMNS = ["select", "name", "state", "health", "desired", "rate", "lag", "dead", "worker", "revision"] as const;

const STATES = ["FAILED", "NOT_REPORTING", "RESTARTING", "UNASSIGNED", "PAUSED", "RUNNING", "STOPPED"];
const HEALTHS = ["critical", "warning", "ok", "idle"];

/** A compact any-of filter: a select whose options toggle (shown as "State: FAILED, PAUSED"). */
function MultiSelect({
  label,
  options,
  value,
  onChange,
}: {
  label: string;
  options: string[];
  value: string[];
  onChange: (value: string[]) => void;
}) {
  return (
    <select
      aria-label={`Filter by ${label.toLowerCase()}`}
      data-testid={`filter-${label.toLowerCase()}`}
      value=""
      onChange={(e) => {
        const option = e.target.value;
        if (option === "*") onChange([]);
        else if (option) onChange(value.includes(option) ? value.filter((v) => v !== option) : [...value, option]);
      }}
    >
      <option value="">
        {label}: {value.length ? value.join(", ") : "any"}
      </option>
      {options.map((option) => (
        <option key={option} value={option}>
          {value.includes(option) ? "✓ " : ""}
          {option}
        </option>
      ))}
      {value.length > 0 && <option value="*">(any {label.toLowerCase()})</option>}
    </select>
  );
}

function LabelChips({ labels, onPick }: { labels?: Record<string, string>; onPick: (selector: string) => void }) {
  const entries = Object.entries(labels ?? {});
  if (entries.length === 0) return null;
  return (
    <span className="labels">
      {entries.map(([key, value]) => (
        <button
          key={key}
          type="button"
          className="label-chip"
          title="Show only channels with this label"
          onClick={() => onPick(`${key}=${value}`)}
        >
          {key}={value}
        </button>
      ))}
    </span>
  );
}

/** The first thing a new user sees: what to do next. */
function Welcome({ channels, loading }: { channels: Channel[]; loading: boolean }) {
  const action = useChannelAction();
  const operate = useCan("operate");
  const edit = useCan("edit");
  const demo = channels.find((c) => c.name === DEMO);
  const anyRunning = channels.some((c) => c.target_state !== "STOPPED");
  if (loading || anyRunning) return null;
  return (
    <section className="welcome" aria-label="Getting started">
      <h2>Welcome to Sluice</h2>
      <p>
        A channel moves events from one <strong>source</strong> through a chain of{" "}
        <strong>transforms</strong> to one <strong>sink</strong>, running on Spark.
      </p>
      <ol>
        {demo ? (
          <li>
            Start the demo channel <strong>{DEMO}</strong>: it generates orders, keeps EU orders
            over 100 and shows them in a live tail.{" "}
            <button
              type="button"
              className="primary"
              disabled={action.isPending || !operate.allowed}
              title={operate.reason || undefined}
              onClick={() =>
                action.mutate(
                  { name: DEMO, action: "start" },
                  { onSuccess: () => (window.location.hash = href({ page: "channel", name: DEMO })) },
                )
              }
            >
              Start {DEMO}
            </button>
            {action.error && (
              <span className="error small" role="alert">
                {" "}
                {action.error.message}
              </span>
            )}
          </li>
        ) : null}
        <li>
          Or build your own: drag a source, transforms and a sink onto the canvas, connect them,
          save and start. <a href={href({ page: "build", name: null })}>Open the builder</a>
        </li>
        <li>
          Then watch it on its channel page: state, events per second, lag, tasks, revisions and
          offsets. <a href={href({ page: "workers" })}>Workers</a> shows where channels run.
        </li>
      </ol>
      {(!operate.allowed || !edit.allowed) && (
        <p className="small muted">
          You can look at everything.{" "}
          {!edit.allowed && "Building and saving channels needs the editor role. "}
          {!operate.allowed && "Starting and stopping them needs the operator role. "}
          Ask an administrator for a role you need.
        </p>
      )}
    </section>
  );
}
