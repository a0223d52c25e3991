import "./deadLetters.css";

import { useQuery } from "@tanstack/react-query";

import { api } from "../api/client";
import { confirmButton, confirmLead, type RunTargets } from "./runs";

/** The targets a replay or redrive of the channel would write into now (GET replays/targets). */
export function useRunTargets(name: string, enabled: boolean) {
  return useQuery({
    queryKey: ["run-targets", name],
    queryFn: () => api<RunTargets>(`channels/${encodeURIComponent(name)}/replays/targets`),
    enabled,
    staleTime: 0,
  });
}

/** The confirmation shown before a replay or redrive writes anything: which targets it writes
 * into (each one named, with how it marks the events), and one button that says so. */
export function RunConfirm(props: {
  name: string;
  verb: "replay" | "redrive";
  /** What is about to run, e.g. "Replay of 10:00 – 11:00". */
  what: string;
  /** A warning of its own (letters already redriven), shown above the targets. */
  warning?: string;
  pending: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const targets = useRunTargets(props.name, true);
  const list = targets.data?.targets ?? [];
  return (
    <div className="run-confirm" role="alertdialog" aria-label={`Confirm the ${props.verb}`} data-testid="run-confirm">
      <p>
        <strong>{props.what}</strong>
      </p>
      {props.warning && <p className="error small">{props.warning}</p>}
      {targets.error && (
        <p className="error small" role="alert">
          Could not read the targets: {targets.error.message}
        </p>
      )}
      {targets.data && (
        <>
          <p className="small">{confirmLead(props.verb, list)}</p>
          <ul className="small run-targets" aria-label="Targets it writes into">
            {list.map((target) => (
              <li key={target.name}>
                <strong>{target.name}</strong>
                {target.live ? "" : " (not live)"} — marked: {target.marked}
              </li>
            ))}
          </ul>
        </>
      )}
      <div className="head-actions">
        <button type="button" className="primary" disabled={!targets.data || props.pending} onClick={props.onConfirm}>
          {confirmButton(props.verb, list)}
        </button>
        <button type="button" onClick={props.onCancel}>
          Back
        </button>
      </div>
    </div>
  );
}
