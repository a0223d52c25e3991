import { useWorkers } from "../api/hooks";
import { href } from "../router";
import { StateBadge } from "../ui/StateBadge";
import { ago, fmtTime } from "../ui/format";

/** Runtime workers: state, heartbeat age and the connectors each hosts. */
export function WorkersPage() {
  const workers = useWorkers();
  const list = workers.data ?? [];
  return (
    <div className="stack">
      <h1>Runtime workers</h1>
      <p className="muted small">
        Each worker hosts Spark drivers, one per running channel, and heartbeats every few seconds;
        one silent past the session timeout is declared dead and its channels move to another.
      </p>
      <table className="table">
        <thead>
          <tr>
            <th>Worker</th>
            <th>State</th>
            <th>Host</th>
            <th>PID</th>
            <th>Started</th>
            <th>Last heartbeat</th>
            <th>Channels</th>
          </tr>
        </thead>
        <tbody>
          {list.map((w) => (
            <tr key={w.worker_id}>
              <td>{w.worker_id}</td>
              <td>
                <StateBadge state={w.state} />
              </td>
              <td>{w.host}</td>
              <td>{w.pid ?? "—"}</td>
              <td>{fmtTime(w.started_at)}</td>
              <td>{ago(w.last_heartbeat)}</td>
              <td>
                {w.connectors.length === 0
                  ? "—"
                  : w.connectors.map((c) => (
                      <a key={c} className="chip" href={href({ page: "channel", name: c })}>
                        {c}
                      </a>
                    ))}
              </td>
            </tr>
          ))}
          {!workers.isPending && list.length === 0 && (
            <tr>
              <td colSpan={7} className="muted">
                No runtime worker has reported yet. `make run` starts one.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
