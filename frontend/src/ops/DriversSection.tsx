import type { Cluster, ClusterDriver, ClusterRuntimeWorker } from "../api/types";
import { href } from "../router";
import { StateBadge } from "../ui/StateBadge";
import { fmtAge, fmtSparkMemory } from "../ui/format";

/** Runtime worker → its Spark drivers → the channels whose queries each driver runs. */
export function DriversSection({ cluster }: { cluster: Cluster }) {
  const workers = cluster.runtime_workers;
  return (
    <section className="stack" aria-labelledby="drivers-title" data-testid="drivers">
      <h2 id="drivers-title">Spark drivers</h2>
      <p className="muted small">
        Each runtime worker keeps a few long-lived Spark drivers. A shared driver runs many channels' queries side by
        side, each with its own checkpoint and scheduler pool, up to its capacity; a dedicated one runs a single channel
        (runtime isolation <code>dedicated</code> in its spec). A driver runs the channels of one team only, so a driver
        that dies costs no other team's channel, and fails only its own channels.
      </p>
      {workers.length === 0 && <p className="muted small">No runtime worker has reported yet.</p>}
      {workers.map((worker) => (
        <WorkerDrivers key={worker.worker_id} worker={worker} />
      ))}
    </section>
  );
}

function WorkerDrivers({ worker }: { worker: ClusterRuntimeWorker }) {
  const hosted = worker.drivers.reduce((n, d) => n + d.connectors.length, 0);
  const title = `drivers-${worker.worker_id}`;
  return (
    <div className="panel" role="group" aria-labelledby={title}>
      <h3 id={title} className="worker-title">
        {worker.worker_id} <StateBadge state={worker.state} />
        <span className="small muted">
          {worker.host} · {worker.drivers.length} driver{worker.drivers.length === 1 ? "" : "s"} · {hosted} channel
          {hosted === 1 ? "" : "s"}
        </span>
      </h3>
      <table className="table">
        <caption className="visually-hidden">Spark drivers of runtime worker {worker.worker_id}</caption>
        <thead>
          <tr>
            <th>Driver</th>
            <th>Team</th>
            <th>Isolation</th>
            <th className="num">Channels / capacity</th>
            <th>Memory</th>
            <th className="num">Real-time cores</th>
            <th className="num">PID</th>
            <th className="num">Heartbeat age</th>
            <th>Spark application</th>
            <th>Channels</th>
          </tr>
        </thead>
        <tbody>
          {worker.drivers.map((driver) => (
            <DriverRow key={driver.driver_id} driver={driver} />
          ))}
          {worker.drivers.length === 0 && (
            <tr>
              <td colSpan={10} className="muted">
                No driver: the worker starts one when a channel is placed on it.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

function DriverRow({ driver }: { driver: ClusterDriver }) {
  const unknown = driver.connectors.filter((id) => !driver.channels.includes(id));
  return (
    <tr data-testid={`driver-${driver.driver_id}`}>
      <td className="ellipsis" title={driver.driver_id}>
        {driver.driver_id}
      </td>
      <td title={driver.team ? undefined : "Channels deployed before teams"}>{driver.team || "—"}</td>
      <td>
        <span className={`badge isolation-${driver.isolation}`}>{driver.isolation}</span>
      </td>
      <td className="num">
        {driver.connectors.length} / {driver.capacity}
      </td>
      <td>{fmtSparkMemory(driver.memory)}</td>
      <td className="num">{driver.cores || "—"}</td>
      <td className="num">{driver.pid}</td>
      <td className="num">{fmtAge(driver.heartbeat_age)}</td>
      <td className="ellipsis">{driver.application_id ?? "—"}</td>
      <td>
        {driver.connectors.length === 0
          ? "— (warm, waiting for a channel)"
          : driver.channels.map((name) => (
              <a key={name} className="chip" href={href({ page: "channel", name })}>
                {name}
              </a>
            ))}
        {unknown.map((id) => (
          <span key={id} className="chip muted" title="A connector the console no longer knows">
            {id}
          </span>
        ))}
      </td>
    </tr>
  );
}
