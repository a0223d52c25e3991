import { useMutation, useQueryClient } from "@tanstack/react-query";

import { api } from "../api/client";
import "../builder/shape.css";
import { useDiscovery, type ChannelDiscovery } from "../builder/useShape";
import { Time } from "../ui/Time";
import { useCan } from "../ui/permissions";

/** The channel's schema discovery (GET/PUT /api/v1/channels/{name}/discovery): the switch,
 * the fields its live events showed with when each was first seen, the registry subject. */
export function DiscoveryPanel({ name }: { name: string }) {
  const discovery = useDiscovery(name, true, true);
  const can = useCan("edit");
  const client = useQueryClient();
  const toggle = useMutation({
    mutationFn: (enabled: boolean) =>
      api<ChannelDiscovery>(`channels/${encodeURIComponent(name)}/discovery`, {
        method: "PUT",
        body: JSON.stringify({ enabled }),
      }),
    onSuccess: (data) => client.setQueryData(["discovery", name], data),
  });
  const d = discovery.data;
  return (
    <section className="panel" aria-label="Schema discovery">
      <h2>Schema discovery</h2>
      <label className="check" title={can.reason}>
        <input
          type="checkbox"
          checked={d?.enabled ?? false}
          disabled={!can.allowed || toggle.isPending || !d}
          onChange={(e) => toggle.mutate(e.target.checked)}
        />
        Infer the schema of this channel&apos;s events from samples of its live traffic
      </label>
      <p className="small muted">
        Sampled beside the query every 30 s (a Kafka source: the last record of each partition; files: the first records
        of the newest files; a generator: events made from its config); fields are united and types widened across
        samples. Each change of shape is a new version of the registry subject{" "}
        <code>{d?.subject ?? `${name}-discovered`}</code>. Turning it on or off restarts a running channel&apos;s query.
      </p>
      {toggle.isError && <p className="error small">{String(toggle.error)}</p>}
      {d && d.fields.length > 0 ? (
        <>
          <p className="small">
            {d.samples} event(s) sampled · version {d.version}
            {d.changed_at && (
              <>
                {" "}
                · shape last changed <Time iso={d.changed_at} relative />
              </>
            )}
          </p>
          <table className="discovery-fields small" data-testid="discovered-fields">
            <thead>
              <tr>
                <th>Field</th>
                <th>Types</th>
                <th>First seen</th>
              </tr>
            </thead>
            <tbody>
              {d.fields.map((f) => (
                <tr key={f.path}>
                  <td>
                    <code>{f.path}</code>
                  </td>
                  <td>{f.types.join(" | ")}</td>
                  <td>
                    <Time iso={f.first_seen} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : (
        <p className="small muted">{d?.enabled ? "No events sampled yet." : "Off."}</p>
      )}
    </section>
  );
}
