import { useState } from "react";

import type { Worker } from "../api/types";
import { useWorkerAction, type WorkerAction } from "../api/workerHooks";
import { useCan } from "../ui/permissions";
import { actionMessage, confirmation, workerButtons } from "./workers";

/** One worker's Drain / Back in service / Forget buttons, with the answer beside them. */
export function WorkerActions({ worker, takers }: { worker: Worker; takers: string[] }) {
  const can = useCan("operate_workers");
  const mutation = useWorkerAction();
  const [message, setMessage] = useState<{ text: string; error: boolean } | null>(null);

  function run(action: WorkerAction) {
    const question = confirmation(worker, action, worker.connectors.length, takers);
    if (question && !window.confirm(question)) return;
    setMessage(null);
    mutation.mutate(
      { workerId: worker.worker_id, action },
      {
        onSuccess: (result) => setMessage({ text: actionMessage(worker.worker_id, action, result), error: false }),
        onError: (error) => setMessage({ text: error.message, error: true }),
      },
    );
  }

  return (
    <div className="worker-actions">
      {workerButtons(worker, can.reason).map((b) => (
        <button
          key={b.action}
          type="button"
          className={b.action === "forget" ? "danger" : undefined}
          disabled={!b.enabled || mutation.isPending}
          title={b.title}
          aria-label={`${b.label} ${worker.worker_id}`}
          onClick={() => run(b.action)}
        >
          {b.label}
        </button>
      ))}
      {message && (
        <p className={message.error ? "error small" : "muted small"} role={message.error ? "alert" : "status"}>
          {message.text}
        </p>
      )}
    </div>
  );
}
