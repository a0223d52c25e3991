import { useDeadLetter } from "../api/deadLetterHooks";
import { fmtTime } from "../ui/format";
import { pretty } from "./deadLetters";
import { redrivenText } from "./runs";

/** One dead letter in full: the error, where it failed, where it came from, the event. */
export function DeadLetterDetail({ name, id, onClose }: { name: string; id: string; onClose: () => void }) {
  const letter = useDeadLetter(name, id);
  const d = letter.data;
  return (
    <section className="panel dead-letter-detail" aria-label="Dead letter" data-testid="dead-letter-detail">
      <div className="panel-head">
        <h3 className="dead-letter-title">
          Dead letter <code className="small">{id}</code>
        </h3>
        <button type="button" onClick={onClose} aria-label="Close the dead letter">
          Close
        </button>
      </div>
      {letter.error && (
        <p className="error small" role="alert">
          Could not read it: {letter.error.message}
        </p>
      )}
      {d && (
        <>
          <dl className="facts">
            <dt>Error</dt>
            <dd>
              <strong>{d.error_class}</strong>
            </dd>
            <dt>Message</dt>
            <dd className="dead-letter-message">{d.message}</dd>
            <dt>Stage</dt>
            <dd>{d.stage}</dd>
            {d.rule && (
              <>
                <dt>Rule / target</dt>
                <dd>
                  {d.rule} / {d.target ?? "—"}
                </dd>
              </>
            )}
            <dt>Origin</dt>
            <dd>
              {d.origin.topic ?? "—"} / partition {d.origin.partition ?? "—"} / offset {d.origin.offset ?? "—"}
              {d.origin.timestamp ? ` (${fmtTime(d.origin.timestamp)})` : ""}
            </dd>
            <dt>Dead since</dt>
            <dd>{d.time ? fmtTime(d.time) : "—"}</dd>
            <dt>Stored</dt>
            <dd data-testid="dead-letter-location">{storedAt(d.location)}</dd>
            <dt>Redriven</dt>
            <dd data-testid="dead-letter-redriven">
              {d.redriven ? redrivenText(d.redriven) : "never (a letter that fails again is a new dead letter)"}
            </dd>
            <dt>Event id</dt>
            <dd>{d.event_id ?? "— (never became an event)"}</dd>
          </dl>
          <h4>Original record</h4>
          <pre className="trace" tabIndex={0} role="region" aria-label="Original record">
            {pretty(d.payload)}
          </pre>
          <h4>Event the stage received</h4>
          <pre className="trace" tabIndex={0} role="region" aria-label="Event">
            {pretty(d.event)}
          </pre>
        </>
      )}
    </section>
  );
}

/** Where the dead-letter target keeps it (its place in the target, not where it came from). */
function storedAt(location: Record<string, unknown>): string {
  switch (location.kind) {
    case "kafka":
      return `topic ${String(location.topic)}, partition ${String(location.partition)}, offset ${String(location.offset)}`;
    case "files":
      return `file ${String(location.file)}, row ${String(location.row)}`;
    case "jdbc":
      return `table ${String(location.table)}, id ${String(location.id)}`;
    default:
      return "—";
  }
}
