import { useMemo, useState } from "react";

import { useChannelAction, useChannelsWithStatus } from "../api/hooks";
import type { Channel, ChannelStatus } from "../api/types";
import { href } from "../router";
import { useCan } from "../ui/permissions";
import { StateBadge } from "../ui/StateBadge";
import { eventsPerSecond, fmtNumber, stateRank, totalLag } from "../ui/format";
import { ActionButtons } from "./ActionButtons";
import { HealthBadge, healthRank } from "./HealthBadge";

const DEMO = "demo-orders";

/** Every channel with its live figures; failures first; actions on a selection. */
export function ChannelsPage() {
  const channels = useChannelsWithStatus();
  const list = useMemo(() => channels.data ?? [], [channels.data]);
  const byName = new Map<string, ChannelStatus>(list.map((c) => [c.name, c.status]));
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [messages, setMessages] = useState<string[]>([]);
  const edit = useCan("edit");
  const [byHealth, setByHealth] = useState(false);

  const rows = [...list].sort((a, b) => {
    if (byHealth) {
      const health = healthRank(byName.get(a.name)?.health) - healthRank(byName.get(b.name)?.health);
      if (health !== 0) return health;
    }
    const rank = stateRank(byName.get(a.name)?.state ?? a.state) - stateRank(byName.get(b.name)?.state ?? b.state);
    return rank !== 0 ? rank : a.name.localeCompare(b.name);
  });
  const chosen = rows.filter((c) => selected.has(c.name));
  const toggle = (name: string) =>
    setSelected((current) => {
      const next = new Set(current);
      if (next.has(name)) next.delete(name);
      else next.add(name);
      return next;
    });

  return (
    <div className="stack">
      <Welcome channels={list} loading={channels.isPending} />
      <div className="section-head">
        <h1>Channels</h1>
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
      <div className="bulk">
        <span className="muted small">{chosen.length} selected</span>
        <ActionButtons
          names={chosen.map((c) => c.name)}
          targets={chosen.map((c) => c.target_state)}
          onDone={setMessages}
        />
      </div>
      {messages.length > 0 && (
        <div role="alert">
<ul className="error small">
          {messages.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
</div>
      )}
      <table className="table channels">
        <colgroup>
          <col style={{ width: "2.5rem" }} />
          <col />
          <col style={{ width: "9rem" }} />
          <col style={{ width: "8rem" }} />
          <col style={{ width: "8rem" }} />
          <col style={{ width: "7rem" }} />
          <col style={{ width: "7rem" }} />
          <col style={{ width: "7rem" }} />
          <col style={{ width: "10rem" }} />
          <col style={{ width: "6rem" }} />
        </colgroup>
        <thead>
          <tr>
            <th>
              <input
                type="checkbox"
                aria-label="Select all channels"
                checked={rows.length > 0 && chosen.length === rows.length}
                onChange={(e) => setSelected(e.target.checked ? new Set(rows.map((c) => c.name)) : new Set())}
              />
            </th>
            <th>Name</th>
            <th>State</th>
            <th aria-sort={byHealth ? "ascending" : "none"}>
              <button
                type="button"
                className="link"
                title="Sort worst health first (click again for the default order: failures first, then by name)"
                onClick={() => setByHealth((on) => !on)}
                data-testid="sort-health"
              >
                Health{byHealth ? " ▲" : ""}
              </button>
            </th>
            <th>Target</th>
            <th className="num">Events/s</th>
            <th className="num">Lag</th>
            <th className="num">Dead letters</th>
            <th>Worker</th>
            <th>Revision</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((channel) => {
            const status = byName.get(channel.name);
            return (
              <tr key={channel.name} data-testid={`channel-row-${channel.name}`}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select ${channel.name}`}
                    checked={selected.has(channel.name)}
                    onChange={() => toggle(channel.name)}
                  />
                </td>
                <td>
                  <a href={href({ page: "channel", name: channel.name })}>{channel.name}</a>
                  <div className="small muted ellipsis">{channel.description}</div>
                </td>
                <td>
                  <StateBadge state={status?.state ?? channel.state} />
                </td>
                <td>
                  <HealthBadge health={status?.health} />
                </td>
                <td>{status?.target_state ?? channel.target_state}</td>
                <td className="num">{fmtNumber(eventsPerSecond(status), 1)}</td>
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
          {!channels.isPending && rows.length === 0 && (
            <tr>
              <td colSpan={10} className="muted">
                No channels yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
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
