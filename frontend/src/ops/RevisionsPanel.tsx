import { useMemo, useState } from "react";

import { useRevisions } from "../api/hooks";
import type { Revision } from "../api/types";
import { Time } from "../ui/Time";
import { defaultPair, diffSpecs, summarize, withContext } from "./revisions";

/** Who saved what and when, and a diff between any two revisions (the running one included). */
export function RevisionsPanel({
  name,
  running,
  latest,
  lastRan = null,
}: {
  name: string;
  running: number | null;
  latest: number | null;
  /** The revision a stopped or failed channel last ran (not "running"). */
  lastRan?: number | null;
}) {
  const revisions = useRevisions(name);
  const list = useMemo(() => revisions.data ?? [], [revisions.data]);
  const [chosen, setChosen] = useState<[number, number] | null>(null);
  const pair = chosen ?? defaultPair(list, running);
  const byNumber = new Map(list.map((r) => [r.number, r]));
  const label = (n: number) => `Revision ${n}${n === running ? " (running)" : ""}${n === latest ? " (latest)" : ""}`;

  return (
    <section className="panel" aria-labelledby="revisions-title" data-testid="revisions">
      <h2 id="revisions-title">Revisions</h2>
      {revisions.error && (
        <p className="error small" role="alert">
          Could not load the revisions: {revisions.error.message}
        </p>
      )}
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Revision list">
        <table className="table">
          <caption className="visually-hidden">Saved revisions, newest first</caption>
          <thead>
            <tr>
              <th>Revision</th>
              <th>Saved</th>
              <th>By</th>
              <th>
                <span className="visually-hidden">Compare</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((r) => (
              <tr key={r.number}>
                <td>
                  {r.number}
                  {r.number === running && <span className="badge state-running">running</span>}
                  {r.number === lastRan && <span className="badge">last ran</span>}
                  {r.number === latest && r.number !== running && <span className="badge drift">latest</span>}
                </td>
                <td>
                  <Time iso={r.created_at} relative />
                </td>
                <td>{r.created_by ?? "—"}</td>
                <td>
                  {running !== null && r.number !== running && byNumber.has(running) && (
                    <button
                      type="button"
                      className="link"
                      onClick={() => setChosen([Math.min(running, r.number), Math.max(running, r.number)])}
                    >
                      Diff with running
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {!revisions.isPending && list.length === 0 && (
              <tr>
                <td colSpan={4} className="muted">
                  No revision saved yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {list.length > 1 && pair && (
        <div className="compare">
          <div className="row">
            <RevisionSelect
              caption="From"
              label="Compare from revision"
              value={pair[0]}
              numbers={list.map((r) => r.number)}
              describe={label}
              onChange={(number) => setChosen([number, pair[1]])}
            />
            <RevisionSelect
              caption="To"
              label="Compare to revision"
              value={pair[1]}
              numbers={list.map((r) => r.number)}
              describe={label}
              onChange={(number) => setChosen([pair[0], number])}
            />
          </div>
          <SpecDiff before={byNumber.get(pair[0])} after={byNumber.get(pair[1])} />
        </div>
      )}
    </section>
  );
}

function SpecDiff({ before, after }: { before?: Revision; after?: Revision }) {
  const lines = useMemo(() => (before && after ? diffSpecs(before.spec, after.spec) : []), [before, after]);
  if (!before || !after) return null;
  const { added, removed } = summarize(lines);
  return (
    <figure className="diff" data-testid="revision-diff">
      <figcaption className="small">
        Revision {before.number} → revision {after.number}:{" "}
        {added + removed === 0 ? "the specs are the same." : `${added} line(s) added, ${removed} removed.`}
      </figcaption>
      <div
        className="diff-lines"
        role="list"
        tabIndex={0}
        aria-label={`Changes from revision ${before.number} to ${after.number}`}
      >
        {withContext(lines).map((line, index) =>
          "folded" in line ? (
            <div key={`fold-${index}`} className="diff-line folded" role="listitem">
              … {line.folded} unchanged line{line.folded === 1 ? "" : "s"}
            </div>
          ) : line.kind === "added" ? (
            <ins key={index} className="diff-line added" role="listitem">
              <span className="visually-hidden">Added: </span>
              <span aria-hidden="true">+ </span>
              {line.text}
            </ins>
          ) : line.kind === "removed" ? (
            <del key={index} className="diff-line removed" role="listitem">
              <span className="visually-hidden">Removed: </span>
              <span aria-hidden="true">- </span>
              {line.text}
            </del>
          ) : (
            <div key={index} className="diff-line" role="listitem">
              <span aria-hidden="true">{"  "}</span>
              {line.text}
            </div>
          ),
        )}
      </div>
    </figure>
  );
}

function RevisionSelect(props: {
  caption: string;
  label: string;
  value: number;
  numbers: number[];
  describe: (n: number) => string;
  onChange: (n: number) => void;
}) {
  return (
    <label className="field inline">
      <span>{props.caption}</span>
      <select value={props.value} onChange={(e) => props.onChange(Number(e.target.value))} aria-label={props.label}>
        {props.numbers.map((n) => (
          <option key={n} value={n}>
            {props.describe(n)}
          </option>
        ))}
      </select>
    </label>
  );
}
