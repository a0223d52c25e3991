import "./deadLetters.css";

import { useEffect, useRef, useState } from "react";

import { useDeadLetters, useRedrive, type RedriveResult } from "../api/deadLetterHooks";
import { fmtNumber, fmtTime } from "../ui/format";
import { useCan } from "../ui/permissions";
import { DeadLetterDetail } from "./DeadLetterDetail";
import { DEAD_LETTERS_PAGE, NO_FILTERS, opensDeadLetters, redriveBody, type DeadLetterFilters } from "./deadLetters";
import { RunConfirm } from "./RunConfirm";
import { redrivenAgainWarning, redrivenText } from "./runs";

/** A channel's dead letters: filter, inspect one, select some or all, redrive them. */
export function DeadLettersPanel({ name }: { name: string }) {
  const [filters, setFilters] = useState<DeadLetterFilters>(NO_FILTERS);
  const [page, setPage] = useState(0);
  const [selected, setSelected] = useState<string[]>([]);
  const [open, setOpen] = useState<string | null>(null);
  const [result, setResult] = useState<RedriveResult | null>(null);
  const [failure, setFailure] = useState("");
  const [asked, setAsked] = useState<"all" | string[] | null>(null);
  const list = useDeadLetters(name, filters, page);
  const redrive = useRedrive(name);
  const operate = useCan("operate");
  const ref = useRef<HTMLElement>(null);
  const body = list.data;
  const rows = body?.results ?? [];
  const facets = body?.facets ?? {};

  useEffect(() => {
    // The dead-letter card links here (#/channels/<name>/dead-letters), on this same page.
    const reveal = () => {
      if (opensDeadLetters(window.location.hash)) ref.current?.scrollIntoView({ block: "start" });
    };
    reveal();
    window.addEventListener("hashchange", reveal);
    return () => window.removeEventListener("hashchange", reveal);
  }, []);

  const change = (key: keyof DeadLetterFilters, value: string) => {
    setFilters({ ...filters, [key]: value });
    setPage(0);
    setSelected([]);
  };
  const toggle = (id: string) =>
    setSelected(selected.includes(id) ? selected.filter((s) => s !== id) : [...selected, id]);
  const pageIds = rows.filter((r) => r.redrivable).map((r) => r.id);
  const allOnPage = pageIds.length > 0 && pageIds.every((id) => selected.includes(id));

  const ask = (selection: "all" | string[]) => {
    setFailure("");
    setResult(null);
    setAsked(selection);
  };
  const send = (selection: "all" | string[]) => {
    redrive.mutate(redriveBody(selection, filters), {
      onSuccess: (answer) => {
        setResult(answer);
        setSelected([]);
      },
      onError: (error) => setFailure(error.message),
      onSettled: () => setAsked(null),
    });
  };
  const askedCount = asked === "all" ? (body?.count ?? 0) : (asked?.length ?? 0);
  const askedWhat =
    asked === "all"
      ? `Redrive all ${fmtNumber(askedCount)} dead letters matching the filters of ${name}`
      : `Redrive ${askedCount} dead letter(s) of ${name}`;
  // Letters redriven already (on this page: a redrive of "all" may hold others too).
  const askedMarks = rows.filter((row) => asked === "all" || asked?.includes(row.id)).map((row) => row.redriven);
  const canRedrive = operate.allowed && !redrive.isPending;

  return (
    <section className="panel" aria-labelledby="dead-letters-title" data-testid="dead-letters" ref={ref}>
      <div className="panel-head">
        <h2 id="dead-letters-title">Dead letters</h2>
        <span className="small muted" data-testid="dead-letters-target">
          {body?.target.location}
        </span>
      </div>
      {body && !body.target.readable && <p className="small note">{body.target.note}</p>}
      {list.error && (
        <p className="error small" role="alert">
          Could not read the dead letters: {list.error.message}
        </p>
      )}
      <div className="filters" role="group" aria-label="Dead-letter filters">
        <FacetSelect
          label="Error class"
          value={filters.error_class}
          options={facets.error_class}
          onChange={(v) => change("error_class", v)}
        />
        <FacetSelect label="Stage" value={filters.stage} options={facets.stage} onChange={(v) => change("stage", v)} />
        {(facets.rule ?? []).length > 0 && (
          <FacetSelect label="Rule" value={filters.rule} options={facets.rule} onChange={(v) => change("rule", v)} />
        )}
        <label>
          From{" "}
          <input
            type="datetime-local"
            aria-label="From"
            value={filters.since}
            onChange={(e) => change("since", e.target.value)}
          />
        </label>
        <label>
          To{" "}
          <input
            type="datetime-local"
            aria-label="To"
            value={filters.until}
            onChange={(e) => change("until", e.target.value)}
          />
        </label>
        <label>
          Message{" "}
          <input
            type="search"
            aria-label="Message contains"
            placeholder="contains…"
            value={filters.q}
            onChange={(e) => change("q", e.target.value)}
          />
        </label>
      </div>
      <div className="panel-head">
        <p className="small muted" data-testid="dead-letters-count">
          {body ? `${fmtNumber(body.count)} matching, newest first` : "…"}
          {body?.scan.limit_reached ? ` (the newest ${fmtNumber(body.scan.limit)} looked at)` : ""}
        </p>
        <div className="head-actions">
          <button
            type="button"
            className="primary"
            disabled={!canRedrive || selected.length === 0}
            title={operate.reason || undefined}
            onClick={() => ask(selected)}
          >
            Redrive selected ({selected.length})
          </button>
          <button
            type="button"
            disabled={!canRedrive || !body?.count}
            title={operate.reason || undefined}
            onClick={() => ask("all")}
          >
            Redrive all matching
          </button>
        </div>
      </div>
      {asked !== null && (
        <RunConfirm
          name={name}
          verb="redrive"
          what={`${askedWhat}? Their original records go through the channel's current spec again.`}
          warning={redrivenAgainWarning(askedMarks)}
          pending={redrive.isPending}
          onConfirm={() => send(asked)}
          onCancel={() => setAsked(null)}
        />
      )}
      <div role="status" className="small" data-testid="redrive-result">
        {result && (
          <p className="ok">
            Redrove {fmtNumber(result.count)} dead letter(s) through {result.topic}
            {result.run ? `: run ${result.run.id} ${result.run.state}` : ""}
            {Object.keys(result.skipped).length > 0 ? `; ${Object.keys(result.skipped).length} skipped` : ""}.
          </p>
        )}
        {failure && <p className="error">Redrive failed: {failure}</p>}
      </div>
      <div className="table-scroll dead-letters-table">
        <table className="table compact">
          <thead>
            <tr>
              <th>
                <input
                  type="checkbox"
                  aria-label="Select every dead letter on this page"
                  checked={allOnPage}
                  onChange={() =>
                    setSelected(
                      allOnPage
                        ? selected.filter((id) => !pageIds.includes(id))
                        : [...new Set([...selected, ...pageIds])],
                    )
                  }
                />
              </th>
              <th>Time</th>
              <th>Error</th>
              <th>Stage / rule</th>
              <th>Origin</th>
              <th>Message</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={row.id} className={open === row.id ? "selected" : undefined}>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Select dead letter ${row.id}`}
                    disabled={!row.redrivable}
                    checked={selected.includes(row.id)}
                    onChange={() => toggle(row.id)}
                  />
                </td>
                <td className="small">{row.time ? fmtTime(row.time) : "—"}</td>
                <td>
                  <button
                    type="button"
                    className="link"
                    onClick={() => setOpen(row.id)}
                    aria-label={`Inspect dead letter ${row.id}`}
                  >
                    {row.error_class}
                  </button>
                </td>
                <td className="small">{row.rule ? `${row.rule} (${row.target ?? "—"})` : row.stage}</td>
                <td className="small">
                  {row.origin.topic ?? "—"}/{row.origin.partition ?? "—"}/{row.origin.offset ?? "—"}
                </td>
                <td className="small ellipsis" title={row.message}>
                  {row.message}
                  {row.redriven && (
                    <div className="redriven-mark" data-testid="redriven-mark">
                      {redrivenText(row.redriven)}
                    </div>
                  )}
                </td>
              </tr>
            ))}
            {body && rows.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No dead letters{body.target.readable ? " match" : ""}.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      <div className="pager">
        <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <span className="small muted">
          Page {page + 1} of {Math.max(1, Math.ceil((body?.count ?? 0) / DEAD_LETTERS_PAGE))}
        </span>
        <button type="button" disabled={!body?.next} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </div>
      {open && <DeadLetterDetail name={name} id={open} onClose={() => setOpen(null)} />}
    </section>
  );
}

function FacetSelect(props: { label: string; value: string; options?: string[]; onChange: (value: string) => void }) {
  return (
    <label>
      {props.label}{" "}
      <select aria-label={props.label} value={props.value} onChange={(e) => props.onChange(e.target.value)}>
        <option value="">any</option>
        {(props.options ?? []).map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
    </label>
  );
}
