import { useState } from "react";

import { useCluster, useWorkers } from "../api/hooks";
import type { Cluster } from "../api/types";
import { href } from "../router";
import { StateBadge } from "../ui/StateBadge";
import { Time } from "../ui/Time";
import { fmtAge, fmtMiB } from "../ui/format";
import { DriversSection } from "./DriversSection";
import { WorkerActions } from "./WorkerActions";
import { SERVICE_FILTERS, capacityCells, serviceLabel, takersFor } from "./workers";
import "./workers.css";

/**
 * Runtime workers (state, heartbeat age, connectors), the Spark drivers each runs with the
 * channels they host, and the Spark cluster the executors use.
 */
export function WorkersPage() {
  const [service, setService] = useState("");
  const workers = useWorkers(service);
  const cluster = useCluster();
  const list = workers.data ?? [];
  return (
    <div className="stack">
      <h1>Workers</h1>
      <section className="stack" aria-labelledby="runtime-workers-title">
        <h2 id="runtime-workers-title">Runtime workers</h2>
        <p className="muted small">
          Each worker runs a few long-lived Spark drivers that host its channels, and heartbeats every few seconds; one
          silent past the session timeout is declared dead and its channels move to another. Drain a worker to take it
          out of service: its channels move to the other live workers, each resuming from its checkpoint, and it gets no
          new ones until it is back in service. A dead worker can be forgotten. A real-time channel holds one core per
          source partition: one whose worker has too few free moves to a worker that has them.
        </p>
        <label className="small service-filter">
          Service{" "}
          <select value={service} onChange={(e) => setService(e.target.value)} data-testid="service-filter">
            {SERVICE_FILTERS.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </label>
        <table className="table workers-table">
          <thead>
            <tr>
              <th>Worker</th>
              <th>State</th>
              <th>Service</th>
              <th>Host</th>
              <th>PID</th>
              <th>Started</th>
              <th>Last heartbeat</th>
              <th className="num" title="Cores its real-time channels hold, of those it has (SLUICE_WORKER_CORES)">
                Real-time cores
              </th>
              <th className="num" title="Free memory on its host (MemAvailable)">
                Free memory
              </th>
              <th className="num" title="Runtime slots the group gave it: their channels run there">
                Slots
              </th>
              <th>Channels</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.map((w) => (
              <tr key={w.worker_id} className={w.service === "IN_SERVICE" ? undefined : "worker-draining"}>
                <td>{w.worker_id}</td>
                <td>
                  <StateBadge state={w.state} />
                </td>
                <td>
                  <span className={`badge service-${w.service.toLowerCase()}`} data-testid="service-badge">
                    {serviceLabel(w.service)}
                  </span>
                </td>
                <td>{w.host}</td>
                <td>{w.pid ?? "—"}</td>
                <td>
                  <Time iso={w.started_at} />
                </td>
                <td>
                  <Time iso={w.last_heartbeat} relative />
                </td>
                <td className="num" data-testid="worker-cores">
                  {capacityCells(w.capacity).cores}
                </td>
                <td className="num">{fmtMiB(w.capacity?.memory_available_mb)}</td>
                <td className="num" data-testid="worker-slots">
                  {capacityCells(w.capacity).slots}
                </td>
                <td>
                  {w.connectors.length === 0
                    ? "—"
                    : w.connectors.map((c) => (
                        <a key={c} className="chip" href={href({ page: "channel", name: c })}>
                          {c}
                        </a>
                      ))}
                </td>
                <td>
                  <WorkerActions worker={w} takers={takersFor(w.worker_id, cluster.data?.runtime_workers ?? list)} />
                </td>
              </tr>
            ))}
            {!workers.isPending && list.length === 0 && (
              <tr>
                <td colSpan={12} className="muted">
                  {service
                    ? `No runtime worker is ${serviceLabel(service)}.`
                    : "No runtime worker has reported yet. `make run` starts one."}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </section>
      {cluster.error && (
        <p className="notice small" role="status">
          The Spark cluster view is unavailable: {cluster.error.message}
        </p>
      )}
      {cluster.data && <DriversSection cluster={cluster.data} />}
      {cluster.data && <SparkCluster cluster={cluster.data} />}
    </div>
  );
}

function SparkCluster({ cluster }: { cluster: Cluster }) {
  const spark = cluster.spark;
  return (
    <>
      <section className="stack" aria-labelledby="spark-title" data-testid="spark-cluster">
        <h2 id="spark-title">Spark cluster</h2>
        <p className="muted small">
          {spark.mode === "local"
            ? `Master ${spark.master}: executors run inside each driver, on its runtime worker.`
            : `Master ${spark.master}${spark.status ? ` (${spark.status})` : ""}.`}{" "}
          {spark.web_ui && (
            <a href={spark.web_ui} target="_blank" rel="noreferrer">
              Spark master UI
            </a>
          )}
        </p>
        {spark.error && (
          <p className="notice small" role="status" data-testid="spark-error">
            The Spark master did not answer: {spark.error}
          </p>
        )}
        {spark.mode === "standalone" && (
          <table className="table">
            <caption className="visually-hidden">Spark workers</caption>
            <thead>
              <tr>
                <th>Spark worker</th>
                <th>State</th>
                <th>Host</th>
                <th className="num">Cores used / total</th>
                <th className="num">Memory used / total</th>
                <th className="num">Heartbeat age</th>
              </tr>
            </thead>
            <tbody>
              {spark.workers.map((w) => (
                <tr key={w.worker_id}>
                  <td className="ellipsis" title={w.worker_id}>
                    {w.web_ui ? (
                      <a href={w.web_ui} target="_blank" rel="noreferrer">
                        {w.worker_id}
                      </a>
                    ) : (
                      w.worker_id
                    )}
                  </td>
                  <td>
                    <StateBadge state={w.state} />
                  </td>
                  <td>{w.port ? `${w.host}:${w.port}` : w.host}</td>
                  <td className="num">
                    {w.cores_used} / {w.cores}
                  </td>
                  <td className="num">
                    {fmtMiB(w.memory_used_mb)} / {fmtMiB(w.memory_mb)}
                  </td>
                  <td className="num">{fmtAge(w.heartbeat_age)}</td>
                </tr>
              ))}
              {spark.workers.length === 0 && (
                <tr>
                  <td colSpan={6} className="muted">
                    {spark.error ? "Unknown while the master does not answer." : "The master has no workers."}
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        )}
      </section>
      <section className="stack" aria-labelledby="executors-title">
        <h2 id="executors-title">Applications and executors per channel</h2>
        <table className="table">
          <thead>
            <tr>
              <th>Channel</th>
              <th>State</th>
              <th>Runtime worker</th>
              <th>Driver</th>
              <th>Spark application</th>
              <th>Executors (id @ host: cores, active / done / failed tasks)</th>
            </tr>
          </thead>
          <tbody>
            {cluster.channels.map((c) => (
              <tr key={c.connector_id}>
                <td>
                  <a href={href({ page: "channel", name: c.name })}>{c.name}</a>
                </td>
                <td>
                  <StateBadge state={c.state} />
                </td>
                <td>{c.worker_id ?? "—"}</td>
                <td className="ellipsis">{c.driver_id ?? "—"}</td>
                <td className="ellipsis">{c.application_id ?? "—"}</td>
                <td>
                  {c.executors.length === 0 ? (
                    "—"
                  ) : (
                    <ul className="plain small">
                      {c.executors.map((e) => (
                        <li key={e.id}>
                          {e.id} @ {e.host}: {e.cores} cores, {e.active_tasks} / {e.completed_tasks} / {e.failed_tasks}
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
              </tr>
            ))}
            {cluster.channels.length === 0 && (
              <tr>
                <td colSpan={6} className="muted">
                  No channel's driver has reported its executors yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </section>
    </>
  );
}
