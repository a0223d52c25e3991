import { useMe, useTeams } from "../api/hooks";
import type { ChannelWithStatus } from "../api/types";
import { href } from "../router";
import { fmtNumber, totalLag } from "../ui/format";
import { StateBadge } from "../ui/StateBadge";
import { liveEventsPerSecond, notReportingText } from "./channelView";
import { ariaSort, type FleetParams, nextOrdering, type SortKey, unfiltered } from "./fleet";
import { HealthBadge } from "./HealthBadge";
import { teamQuotaText } from "./quotas";
import type { SelectionHandle } from "./selection";

const COLUMNS = ["select", "name", "state", "health", "desired", "rate", "lag", "dead", "worker", "revision"] as const;

/** One page of channels, a row each: a box to tick, the name (with its labels and description),
 * state, health, desired state, rate, lag, dead letters, worker and revision. The sortable
 * headers sort on the server; a label chip filters the list by that label. */
export function ChannelsTable({
  rows,
  count,
  params,
  loading,
  fetching,
  selection,
  onChange,
  onLabel,
}: {
  rows: ChannelWithStatus[];
  count: number;
  params: FleetParams;
  /** The first page has not come yet. */
  loading: boolean;
  fetching: boolean;
  selection: SelectionHandle;
  onChange: (patch: Partial<FleetParams>) => void;
  onLabel: (selector: string) => void;
}) {
  // The team shows beside each name for a user who sees several (one team: it says nothing).
  const showTeam = (useMe().data?.teams.length ?? 0) > 1;
  // The team chip's tooltip: the team's use against its quotas, when it has some.
  const teams = useTeams().data?.results;
  const quotaText = (team: string) => {
    const found = teams?.find((t) => t.name === team);
    return (found && teamQuotaText(found)) || "Team";
  };
  const header = (key: SortKey, label: string) => (
    <th aria-sort={ariaSort(params.ordering, key)}>
      <button
        type="button"
        className="link sort"
        data-testid={`sort-${key}`}
        title="Sort (click again: reverse, a third time: failures first, then by name)"
        onClick={() => onChange({ ordering: nextOrdering(params.ordering, key) })}
      >
        {label}
        {params.ordering === key ? " ▲" : params.ordering === `-${key}` ? " ▼" : ""}
      </button>
    </th>
  );
  return (
    <table className="table channels" aria-busy={fetching}>
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
              checked={selection.pageTicked}
              onChange={(e) => selection.tickPage(e.target.checked)}
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
        {rows.map((channel) => (
          <ChannelRow
            key={channel.name}
            channel={channel}
            showTeam={showTeam}
            teamTitle={showTeam && channel.team ? quotaText(channel.team) : "Team"}
            ticked={selection.isTicked(channel.name)}
            onTick={() => selection.tick(channel.name)}
            onLabel={onLabel}
          />
        ))}
        {!loading && rows.length === 0 && (
          <tr>
            <td colSpan={COLUMNS.length} className="muted">
              {count === 0 && unfiltered(params) ? "No channels yet." : "No channel matches these filters."}
            </td>
          </tr>
        )}
      </tbody>
    </table>
  );
}

function ChannelRow({
  channel,
  ticked,
  onTick,
  onLabel,
  showTeam,
  teamTitle,
}: {
  channel: ChannelWithStatus;
  showTeam: boolean;
  teamTitle: string;
  ticked: boolean;
  onTick: () => void;
  onLabel: (selector: string) => void;
}) {
  const status = channel.status;
  return (
    <tr data-testid={`channel-row-${channel.name}`}>
      <td>
        <input type="checkbox" aria-label={`Select ${channel.name}`} checked={ticked} onChange={onTick} />
      </td>
      <td>
        <a className="channel-name" href={href({ page: "channel", name: channel.name })} title={channel.name}>
          {channel.name}
        </a>
        {showTeam && (
          <span className="team small muted" title={teamTitle} data-testid="channel-team">
            {channel.team}
          </span>
        )}
        <LabelChips labels={channel.labels} onPick={onLabel} />
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
