import { useEffect, useMemo, useState } from "react";

import { useTeams } from "../api/hooks";
import { href } from "../router";
import { useCan } from "../ui/permissions";
import { ChannelsPager } from "./ChannelsPager";
import { ChannelsTable } from "./ChannelsTable";
import { bulkFilter, DEFAULT_PARAMS, type FleetParams, listKey, rangeText, useChannelsPage } from "./fleet";
import { FleetActions } from "./FleetActions";
import { FleetFilters } from "./FleetFilters";
import { teamQuotaText } from "./quotas";
import { useSelection } from "./selection";
import { Welcome } from "./Welcome";
import "./fleet.css";

/** The fleet, one page at a time from the server: search, filters, sort headers, paging, and
 * actions on a selection (or on every matching channel) in one bulk request. */
export function ChannelsPage() {
  const [params, setParams] = useState<FleetParams>(DEFAULT_PARAMS);
  const [searchText, setSearchText] = useState("");
  const [labelText, setLabelText] = useState("");
  const page = useChannelsPage(params);
  const rows = useMemo(() => page.data?.results ?? [], [page.data]);
  const count = page.data?.count ?? 0;
  const selection = useSelection(listKey(params), rows, count);
  const [messages, setMessages] = useState<string[]>([]);
  const edit = useCan("edit");
  const quotaLines = (useTeams().data?.results ?? []).map(teamQuotaText).filter(Boolean);

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

  // Any change but a page turn starts again at the first page (the selection empties with it).
  const change = (patch: Partial<FleetParams>) => setParams((current) => ({ ...current, offset: 0, ...patch }));
  const error = page.error as Error | null;

  return (
    <div className="stack">
      <Welcome channels={rows} loading={page.isPending || count > rows.length} />
      <div className="section-head">
        <h1>
          Channels{" "}
          <span className="muted small" data-testid="channel-count">
            {count.toLocaleString("en")}
          </span>
        </h1>
        {quotaLines.length > 0 && (
          <span className="muted small" data-testid="team-quotas" title="Your teams' use against their quotas">
            {quotaLines.join("; ")}
          </span>
        )}
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
      <FleetFilters
        params={params}
        searchText={searchText}
        labelText={labelText}
        onSearchText={setSearchText}
        onLabelText={setLabelText}
        onChange={change}
      />
      <div className="bulk">
        <span className="muted small" data-testid="selection">
          {selection.text}
        </span>
        {selection.offersAllMatching && (
          <button type="button" className="link small" onClick={selection.selectAllMatching}>
            Select all {count.toLocaleString("en")} matching
          </button>
        )}
        <FleetActions
          {...selection.bulk}
          filter={bulkFilter(params)}
          onDone={(lines) => {
            setMessages(lines);
            selection.clear();
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
      <ChannelsTable
        rows={rows}
        count={count}
        params={params}
        loading={page.isPending}
        fetching={page.isFetching}
        selection={selection}
        onChange={change}
        onLabel={setLabelText}
      />
      <ChannelsPager
        params={params}
        shown={rows.length}
        count={count}
        onOffset={(offset) => setParams((current) => ({ ...current, offset }))}
        onChange={change}
      />
    </div>
  );
}
