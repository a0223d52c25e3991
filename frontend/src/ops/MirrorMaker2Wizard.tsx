import { useState } from "react";
import { useQueryClient } from "@tanstack/react-query";

import { ApiError, api } from "../api/client";
import type { OffsetsMessage } from "../api/types";
import { fmtNumber } from "../ui/format";
import {
  buildMirrorRequest,
  defaultOffsetsTopic,
  mirrorErrors,
  previewRows,
  type Direction,
  type HandBack,
  type MirrorField,
  type MirrorForm,
  type MirrorMaker2Request,
  type MirrorPreview,
} from "./mirrormaker2";
import "./mirrormaker2.css";

type Errors = Partial<Record<MirrorField | "", string>>;
type Step = "closed" | "where" | "review" | "done";

const TITLES: Record<Direction, string> = {
  takeover: "Take over from MirrorMaker 2",
  handback: "Hand back to MirrorMaker 2",
};

function query(body: MirrorMaker2Request): string {
  const params = new URLSearchParams({ source_alias: body.source_alias });
  if (body.offsets_topic) params.set("offsets_topic", body.offsets_topic);
  if (body.bootstrap_servers) params.set("bootstrap_servers", body.bootstrap_servers);
  return params.toString();
}

/**
 * The offsets panel's MirrorMaker 2 wizard: 1. which way and where MM2 keeps its offsets,
 * 2. review MM2's offsets next to the channel's (what the move sets), 3. apply.
 */
export function MirrorMaker2Wizard({
  name,
  enabled,
  disabledReason,
}: {
  name: string;
  enabled: boolean;
  disabledReason: string;
}) {
  const client = useQueryClient();
  const [step, setStep] = useState<Step>("closed");
  const [direction, setDirection] = useState<Direction>("takeover");
  const [form, setForm] = useState<MirrorForm>({ source_alias: "", offsets_topic: "", bootstrap_servers: "" });
  const [errors, setErrors] = useState<Errors>({});
  const [preview, setPreview] = useState<MirrorPreview | null>(null);
  const [request, setRequest] = useState<MirrorMaker2Request | null>(null);
  const [result, setResult] = useState("");
  const [busy, setBusy] = useState(false);
  const path = `channels/${encodeURIComponent(name)}/offsets`;

  const fail = (error: unknown) => {
    if (error instanceof ApiError) {
      const fields = error.fieldErrors();
      setErrors(Object.keys(fields).length > 0 && error.status === 400 ? mirrorErrors(fields) : { "": error.message });
    } else setErrors({ "": String(error) });
  };

  const open = (way: Direction) => {
    setDirection(way);
    setErrors({});
    setResult("");
    setPreview(null);
    setStep("where");
  };

  const onReview = async () => {
    const built = buildMirrorRequest(form);
    if (!built.ok) {
      setErrors(built.errors);
      return;
    }
    setErrors({});
    setBusy(true);
    try {
      setPreview(await api<MirrorPreview>(`${path}/mirrormaker2?${query(built.body)}`));
      setRequest(built.body);
      setStep("review");
    } catch (error) {
      setStep("where");
      fail(error);
    } finally {
      setBusy(false);
    }
  };

  const onApply = async () => {
    if (!request) return;
    setErrors({});
    setBusy(true);
    try {
      if (direction === "takeover") {
        const answer = await api<OffsetsMessage>(`${path}/copy`, {
          method: "POST",
          body: JSON.stringify({ from_mirrormaker2: request }),
        });
        setResult(answer.message);
      } else {
        const answer = await api<HandBack>(`${path}/mirrormaker2`, { method: "POST", body: JSON.stringify(request) });
        setResult(
          `${answer.message}: ${answer.offsets.length} partition(s) written to ${answer.offsets_topic}` +
            (answer.created_topic ? " (topic created)" : "") +
            ". Start MirrorMaker 2 now: it resumes where the channel stopped.",
        );
      }
      setStep("done");
      void client.invalidateQueries({ queryKey: ["offsets", name] });
      void client.invalidateQueries({ queryKey: ["lifecycle", name] });
    } catch (error) {
      fail(error);
    } finally {
      setBusy(false);
    }
  };

  const field = (key: MirrorField, label: string, placeholder: string, hint: string) => (
    <label className="mm2-field">
      <span>{label}</span>
      <input
        name={key}
        value={form[key]}
        placeholder={placeholder}
        aria-invalid={Boolean(errors[key])}
        aria-describedby={errors[key] ? `mm2-error-${key}` : `mm2-hint-${key}`}
        onChange={(e) => setForm({ ...form, [key]: e.target.value })}
      />
      {errors[key] ? (
        <span id={`mm2-error-${key}`} className="error small">
          {errors[key]}
        </span>
      ) : (
        <span id={`mm2-hint-${key}`} className="muted small">
          {hint}
        </span>
      )}
    </label>
  );

  if (step === "closed") {
    return (
      <div className="mm2" data-testid="mm2-wizard">
        <h3>MirrorMaker 2</h3>
        <p className="small muted">
          Take over replication from MirrorMaker 2 (the channel resumes right after the last records MM2 copied), or
          hand it back (MM2 resumes where the channel stopped). Stop MirrorMaker 2 first.
        </p>
        <div className="row">
          <button
            type="button"
            onClick={() => open("takeover")}
            disabled={!enabled}
            title={disabledReason || undefined}
          >
            {TITLES.takeover}…
          </button>
          <button
            type="button"
            onClick={() => open("handback")}
            disabled={!enabled}
            title={disabledReason || undefined}
          >
            {TITLES.handback}…
          </button>
        </div>
      </div>
    );
  }

  const rows = preview ? previewRows(preview, direction) : [];
  return (
    <div className="mm2" data-testid="mm2-wizard" role="group" aria-labelledby="mm2-title">
      <h3 id="mm2-title">
        {TITLES[direction]}{" "}
        <span className="muted small">step {step === "where" ? 1 : step === "review" ? 2 : 3} of 3</span>
      </h3>
      {step === "where" && (
        <>
          <p className="small muted">Where MirrorMaker 2 keeps its source offsets (its Kafka Connect offsets topic).</p>
          {field(
            "source_alias",
            "Source cluster alias",
            "e.g. us-east",
            "The source's alias in mm2.properties (the a of a->b.enabled).",
          )}
          {field(
            "offsets_topic",
            "Offsets topic",
            defaultOffsetsTopic(form.source_alias),
            "Leave blank for MM2's default.",
          )}
          {field(
            "bootstrap_servers",
            "Brokers of MM2's target cluster",
            "the channel's sink brokers",
            "Must be the brokers of the channel's Kafka sink or source.",
          )}
          <div className="row">
            <button type="button" className="primary" onClick={() => void onReview()} disabled={busy || !enabled}>
              Next: review offsets
            </button>
            <button type="button" onClick={() => setStep("closed")}>
              Cancel
            </button>
          </div>
        </>
      )}
      {step === "review" && preview && (
        <>
          <p className="small">
            {preview.offsets_topic} on {preview.bootstrap_servers}, alias <code>{preview.source_alias}</code>.{" "}
            {direction === "takeover"
              ? "The channel's next start reads each partition right after MM2's last copied record."
              : "MM2's offsets become the channel's position; a MirrorMaker 2 started next resumes there."}
          </p>
          <table className="table" data-testid="mm2-preview">
            <thead>
              <tr>
                <th>Topic</th>
                <th className="num">Partition</th>
                <th className="num">MM2 last copied</th>
                <th className="num">Channel next offset</th>
                <th className="num">
                  {direction === "takeover" ? "Channel next offset after" : "MM2 last copied after"}
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.key}>
                  <td className="ellipsis">{row.topic}</td>
                  <td className="num">{row.partition}</td>
                  <td className="num">{row.mirror === null ? "—" : fmtNumber(row.mirror)}</td>
                  <td className="num">{row.channel === null ? "—" : fmtNumber(row.channel)}</td>
                  <td className="num">
                    <strong>{row.after === null ? "unchanged" : fmtNumber(row.after)}</strong>
                  </td>
                </tr>
              ))}
              {rows.length === 0 && (
                <tr>
                  <td colSpan={5} className="muted">
                    Neither MirrorMaker 2 nor the channel has offsets for the topics the channel reads.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
          <div className="row">
            <button
              type="button"
              className="primary"
              onClick={() => void onApply()}
              disabled={busy || !enabled || rows.length === 0}
            >
              {direction === "takeover" ? "Take over" : "Hand back"}
            </button>
            <button type="button" onClick={() => setStep("where")}>
              Back
            </button>
          </div>
        </>
      )}
      {step === "done" && (
        <>
          <p className="small" data-testid="mm2-result" role="status">
            {result}
          </p>
          <button type="button" onClick={() => setStep("closed")}>
            Close
          </button>
        </>
      )}
      {errors[""] && (
        <p className="error small" role="alert">
          {errors[""]}
        </p>
      )}
    </div>
  );
}
