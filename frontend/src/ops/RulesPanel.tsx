import type { ChannelSpec, ChannelStatus } from "../api/types";
import { patternSummary } from "../graph/rules";
import { fmtNumber } from "../ui/format";

/** A bus's rules with their counts since the channel was first started (status `rules`). */
export function RulesPanel({ spec, status }: { spec: ChannelSpec; status?: ChannelStatus }) {
  const counts = new Map((status?.rules ?? []).map((r) => [r.rule, r]));
  return (
    <section className="panel" aria-label="Rules">
      <h2>Rules</h2>
      <div className="table-scroll">
        <table className="table" data-testid="rules-table">
          <thead>
            <tr>
              <th>Rule</th>
              <th>Matches</th>
              <th className="num">Matched</th>
              <th className="num">Delivered</th>
              <th className="num">Failed</th>
              <th className="num">Matched/s</th>
              <th className="num">Delivered/s</th>
              <th>Targets</th>
            </tr>
          </thead>
          <tbody>
            {(spec.rules ?? []).map((rule, index) => {
              const c = counts.get(rule.name);
              return (
                <tr key={rule.name} data-testid={`rule-row-${rule.name}`}>
                  <td>
                    {rule.name}
                    {rule.enabled === false && <span className="muted small"> (disabled)</span>}
                  </td>
                  <td className="small">{patternSummary(rule.pattern)}</td>
                  <td className="num">{fmtNumber(c?.matched)}</td>
                  <td className="num">{fmtNumber(c?.delivered)}</td>
                  <td className="num">{fmtNumber(c?.failed)}</td>
                  <td className="num">{fmtNumber(c?.matched_per_second, 1)}</td>
                  <td className="num">{fmtNumber(c?.delivered_per_second, 1)}</td>
                  <td className="small">
                    {rule.sinks
                      .map((sink, s) => {
                        const target = c?.targets?.find((t) => t.sink === `rules[${index}].sinks[${s}]`);
                        const tally = target
                          ? `: ${fmtNumber(target.delivered)} delivered, ${fmtNumber(target.failed)} failed`
                          : "";
                        return `${sink.type}${tally}`;
                      })
                      .join("; ")}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {!status?.rules?.length && (
        <p className="muted small">No counts yet: they appear once the bus has run a batch.</p>
      )}
    </section>
  );
}
