import { useState } from "react";

import { useIngestAdmin } from "../api/hooks";
import type { Channel } from "../api/types";
import { useCan } from "../ui/permissions";
import { curlExample, parseRateLimit } from "./ingest";

/** HTTP ingestion of a channel with the `http` source: its producer token and rate limit. */
export function IngestPanel({ channel }: { channel: Channel }) {
  const admin = useIngestAdmin(channel.name);
  const edit = useCan("edit");
  const [issued, setIssued] = useState<string | null>(null);
  const [draft, setDraft] = useState<string | null>(null);
  const [message, setMessage] = useState("");
  const [error, setError] = useState("");
  const token = channel.ingest_token;
  const busy = admin.issue.isPending || admin.revoke.isPending || admin.rateLimit.isPending;
  const disabled = !edit.allowed || busy;
  const title = edit.reason || undefined;
  const shownLimit = draft ?? (channel.ingest_rate_limit == null ? "" : String(channel.ingest_rate_limit));

  const fail = (e: unknown) => {
    setMessage("");
    setError(e instanceof Error ? e.message : String(e));
  };
  const onIssue = () => {
    if (
      token?.exists &&
      !window.confirm(`Rotate the token of ${channel.name}? Producers using the old one are refused from now on.`)
    )
      return;
    setError("");
    admin.issue.mutate(undefined, {
      onSuccess: (answer) => {
        setIssued(answer.token);
        setMessage(answer.created ? "Token issued." : "Token rotated: the old one no longer works.");
      },
      onError: fail,
    });
  };
  const onRevoke = () => {
    if (!window.confirm(`Revoke the token of ${channel.name}? Producers are refused until a new one is issued.`))
      return;
    setError("");
    admin.revoke.mutate(undefined, {
      onSuccess: () => {
        setIssued(null);
        setMessage("Token revoked.");
      },
      onError: fail,
    });
  };
  const onSaveLimit = () => {
    const parsed = parseRateLimit(shownLimit);
    if (!parsed.ok) {
      setError(parsed.error);
      return;
    }
    setError("");
    admin.rateLimit.mutate(parsed.limit, {
      onSuccess: () => {
        setDraft(null);
        setMessage(parsed.limit === null ? "Rate limit: the site default." : `Rate limit: ${parsed.limit} events/s.`);
      },
      onError: fail,
    });
  };

  return (
    <section className="panel" aria-labelledby="ingest-title" data-testid="ingest">
      <h2 id="ingest-title">HTTP ingestion</h2>
      <p className="small muted">
        Producers send events to <code>POST /api/v1/channels/{channel.name}/events</code> with the channel&apos;s token.
      </p>
      <p className="small" data-testid="ingest-token-state">
        {token?.exists ? (
          <>
            Token issued (starts with <code>{token.prefix}</code>).
          </>
        ) : (
          "No token yet: producers are refused until you issue one."
        )}
      </p>
      {issued && (
        <div className="note small" role="status">
          <p>
            Copy the token now; it is not shown again: <code data-testid="ingest-token">{issued}</code>
          </p>
          <pre className="tail-event" tabIndex={0} aria-label="Example request">
            {curlExample(window.location.origin, channel.name, issued)}
          </pre>
        </div>
      )}
      <div className="row">
        <button type="button" onClick={onIssue} disabled={disabled} title={title}>
          {token?.exists ? "Rotate token" : "Issue token"}
        </button>
        <button type="button" className="danger" onClick={onRevoke} disabled={disabled || !token?.exists} title={title}>
          Revoke token
        </button>
      </div>
      <div className="row">
        <label className="field inline">
          <span>Rate limit (events/s)</span>
          <input
            inputMode="numeric"
            value={shownLimit}
            placeholder="site default"
            disabled={disabled}
            title={title}
            aria-invalid={Boolean(error) && draft !== null}
            onChange={(e) => setDraft(e.target.value)}
          />
        </label>
        <button type="button" onClick={onSaveLimit} disabled={disabled || draft === null} title={title}>
          Save limit
        </button>
      </div>
      <div className="small offsets-status" role="status" aria-live="polite">
        {message && <span>{message}</span>}
        {error && <span className="error">{error}</span>}
      </div>
    </section>
  );
}
