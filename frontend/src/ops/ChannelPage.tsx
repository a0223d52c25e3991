import { useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef, useState } from "react";

import { isNotFound, useChannel, useChannelStatus, useLifecycle } from "../api/hooks";
import { ChannelTeam } from "../ui/permissions";
import { href } from "../router";
import { StateBadge } from "../ui/StateBadge";
import { Time } from "../ui/Time";
import { ago, fmtNumber, fmtTime, totalLag } from "../ui/format";
import { ActionButtons } from "./ActionButtons";
import { ChannelNotFound } from "./ChannelNotFound";
import {
  deadLettersGrew,
  lastRanRevision,
  lifecycleLine,
  liveEventsPerSecond,
  noTasksText,
  notReportingText,
  runningRevision,
} from "./channelView";
import { DeadLettersPanel } from "./DeadLettersPanel";
import { failureLine, revisionCard } from "./deploy";
import { DeployBar } from "./DeployBar";
import { DiscoveryPanel } from "./DiscoveryPanel";
import { DeleteChannelButton } from "./DeleteChannelButton";
import { HistoryPanel } from "./HistoryCharts";
import { IngestPanel } from "./IngestPanel";
import { LabelsPanel } from "./LabelsPanel";
import { LiveTail } from "./LiveTail";
import { OffsetsPanel } from "./OffsetsPanel";
import { PipelineCanvas } from "./PipelineCanvas";
import { ReplayPanel } from "./ReplayPanel";
import { RestartPolicyPanel } from "./RestartPolicyPanel";
import { RevisionsPanel } from "./RevisionsPanel";
import { RulesPanel } from "./RulesPanel";

/** One channel at work: status, its newest events near the top (live tail), throughput,
 * tasks, lifecycle, failure trace; a
 * plain not-found page (no buttons, no polling) for a name no channel has. */
export function ChannelPage({ name }: { name: string }) {
  const channel = useChannel(name);
  if (isNotFound(channel.error)) return <ChannelNotFound name={name} />;
  // Nothing else is asked for before the channel is known to exist.
  if (channel.isPending) return <p className="muted page-loading">Loading {name}…</p>;
  return (
    <ChannelTeam.Provider value={channel.data?.team ?? null}>
      <ChannelView name={name} />
    </ChannelTeam.Provider>
  );
}

/** Reads the dead-letter list again as soon as the status counts a new dead letter. */
function useDeadLettersFollowCount(name: string, count: number | null | undefined) {
  const client = useQueryClient();
  const seen = useRef(count);
  useEffect(() => {
    if (deadLettersGrew(seen.current, count)) void client.invalidateQueries({ queryKey: ["dead-letters", name] });
    seen.current = count;
  }, [client, name, count]);
}

function ChannelView({ name }: { name: string }) {
  const channel = useChannel(name);
  const status = useChannelStatus(name);
  const [messages, setMessages] = useState<string[]>([]);
  const s = status.data;
  useDeadLettersFollowCount(name, s?.dead_letters);

  return (
    <div className="stack channel-page">
      <div className="section-head">
        <div className="channel-head">
          <p className="small muted">
            <a href={href({ page: "channels" })}>Channels</a> /
            {channel.data?.team && (
              <>
                {" "}
                <span
                  title="The channel's team: your roles there decide what you may do here"
                  data-testid="channel-page-team"
                >
                  team {channel.data.team}
                </span>{" "}
                /
              </>
            )}
          </p>
          <h1>
            <span className="channel-title" title={name}>
              {name}
            </span>{" "}
            <StateBadge state={s?.state ?? channel.data?.state} title={notReportingText(s)} />
          </h1>
          {s?.state === "NOT_REPORTING" && (
            <p className="state-reason not-reporting" role="status" data-testid="not-reporting">
              {notReportingText(s)}
            </p>
          )}
          {s?.reason && (
            <p className="state-reason" role="status" data-testid="state-reason">
              {s.reason}
            </p>
          )}
          {s?.state === "FAILED" && failureLine(s.trace) && (
            <p className="state-reason failed" role="status" data-testid="failure-reason">
              {failureLine(s.trace)} <a href="#failure">Full trace</a>
            </p>
          )}
          <p className="small muted" data-testid="driver">
            {s?.driver_id ? (
              <>
                {s.state === "NOT_REPORTING"
                  ? "Last reported by driver"
                  : s.state === "STOPPED" || s.state === "FAILED"
                    ? "Last ran in driver"
                    : "Driver"}{" "}
                <a href={href({ page: "workers" })}>{s.driver_id}</a>
                {s.worker_id ? ` on worker ${s.worker_id}` : ""}
              </>
            ) : (
              "No driver runs the channel now."
            )}
          </p>
          <p className="muted small">{channel.data?.description}</p>
        </div>
        <div className="head-actions">
          <ActionButtons
            names={[name]}
            targets={[s?.target_state ?? channel.data?.target_state]}
            onDone={setMessages}
          />
          <a className="button" href={href({ page: "build", name })}>
            Edit in builder
          </a>
          <DeleteChannelButton name={name} onError={setMessages} />
        </div>
      </div>
      <div className="error small messages" role="alert">
        {messages.length > 0 && (
          <ul>
            {messages.map((m) => (
              <li key={m}>{m}</li>
            ))}
          </ul>
        )}
      </div>

      <DeployBar name={name} status={s} />

      <div className="cards">
        <Card
          label="Desired state"
          value={s?.target_state ?? "—"}
          title="What was asked for (Start, Pause, Stop); State is what runs now."
        />
        <Card label="Events/s" value={fmtNumber(liveEventsPerSecond(s), 1)} testId="events-per-second" />
        <Card label="Lag" value={fmtNumber(totalLag(s))} />
        <Card
          label="Dead letters"
          value={fmtNumber(s?.dead_letters)}
          link={`${href({ page: "channel", name })}/dead-letters`}
        />
        <Card label="Worker" value={s?.worker_id ?? "—"} />
        <Card label="Revision" value={revisionCard(s)} />
        <Card label="Generation" value={fmtNumber(s?.generation)} />
        <Card
          label="Last status"
          value={ago(s?.status_seen_at ?? s?.last_status_at)}
          title={fmtTime(s?.status_seen_at ?? s?.last_status_at)}
        />
      </div>

      <LiveTail name={name} />

      <section className="panel" aria-label="Pipeline">
        <h2>Pipeline</h2>
        {channel.data && <PipelineCanvas spec={channel.data.spec} status={s} />}
      </section>

      <HistoryPanel name={name} />

      {channel.data?.spec.rules && <RulesPanel spec={channel.data.spec} status={s} />}

      {s?.trace && (
        <section className="panel failure" aria-label="Failure" id="failure">
          <h2>Failure</h2>
          <pre className="trace" tabIndex={0} role="region" aria-label="Failure trace">
            {s.trace}
          </pre>
        </section>
      )}

      <section className="panel" aria-label="Tasks">
        <h2>Tasks</h2>
        <table className="table">
          <thead>
            <tr>
              <th>Task</th>
              <th>State</th>
              <th>Topic / partition</th>
              <th className="num">Offset</th>
              <th className="num">End offset</th>
              <th className="num">Lag</th>
              <th className="num">Rows/s</th>
              <th>Worker</th>
              <th>Updated</th>
            </tr>
          </thead>
          <tbody>
            {(s?.tasks ?? []).map((task) => (
              <tr key={task.id}>
                <td>{task.id}</td>
                <td>
                  <StateBadge state={task.state} title={notReportingText(s)} />
                </td>
                <td>{task.topic ? `${task.topic} / ${task.partition ?? "—"}` : "—"}</td>
                <td className="num">{fmtNumber(task.offset)}</td>
                <td className="num">{fmtNumber(task.end_offset)}</td>
                <td className="num">{fmtNumber(task.lag)}</td>
                <td className="num">{fmtNumber(task.rows_per_second, 1)}</td>
                <td>{task.worker_id ?? "—"}</td>
                <td>
                  <Time iso={task.updated} relative />
                </td>
              </tr>
            ))}
            {(s?.tasks ?? []).length === 0 && (
              <tr>
                <td colSpan={9} className="muted" data-testid="no-tasks">
                  {noTasksText(s)}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </section>

      <DeadLettersPanel name={name} />
      <DiscoveryPanel name={name} />

      <div className="two-col">
        <RevisionsPanel
          name={name}
          running={runningRevision(s)}
          lastRan={lastRanRevision(s)}
          latest={s?.latest_revision ?? null}
        />
        <OffsetsPanel name={name} status={s} />
      </div>

      {channel.data && <LabelsPanel channel={channel.data} />}
      {channel.data && <RestartPolicyPanel channel={channel.data} />}

      {channel.data?.spec.source.type === "http" && <IngestPanel channel={channel.data} />}
      {["kafka", "http"].includes(channel.data?.spec.source.type ?? "") && <ReplayPanel name={name} />}

      <Lifecycle name={name} />
    </div>
  );
}

function Card({
  label,
  value,
  testId,
  link,
  title,
}: {
  label: string;
  value: string;
  testId?: string;
  link?: string;
  /** The tooltip: the exact figure behind a short one (a relative time's instant). */
  title?: string;
}) {
  return (
    <div className="card" title={title}>
      <div className="card-label">{label}</div>
      <div className="card-value" data-testid={testId}>
        {link ? (
          <a className="card-link" href={link} aria-label={`${label}: ${value}, show them`}>
            {value}
          </a>
        ) : (
          value
        )}
      </div>
    </div>
  );
}

function Lifecycle({ name }: { name: string }) {
  const events = useLifecycle(name);
  return (
    <section className="panel" aria-label="Lifecycle">
      <h2>Lifecycle</h2>
      <ol className="timeline" tabIndex={0} aria-label="Lifecycle events, newest first">
        {(events.data ?? []).slice(0, 30).map((e) => (
          <li key={e.id}>
            <span className="small muted">
              <Time iso={e.created_at} />
            </span>{" "}
            <span>
              {lifecycleLine(e, name).subject} <strong>{lifecycleLine(e, name).change}</strong>
            </span>{" "}
            <span className="small">by {e.actor}</span>
            {e.reason && <div className="small muted">{e.reason}</div>}
          </li>
        ))}
      </ol>
    </section>
  );
}
