import { useEffect, useState } from "react";

import { href } from "../router";
import { fmtTime } from "../ui/format";
import { useCan } from "../ui/permissions";
import { diffLines, prettySchema } from "./diff";
import { type SchemaVersion, useSchemaDiff, useSchemaSubjects, useSchemaVersions } from "./hooks";
import { type Draft, RegisterSchemaForm } from "./RegisterSchemaForm";
import { type SchemaType, starterSchema } from "./register";

interface Opened {
  initial: Draft;
  newVersion: boolean;
  /** Makes a fresh form each time one is opened. */
  key: number;
}

/**
 * The schema registry: its subjects, one subject's versions, the difference between two
 * versions with what each direction of compatibility says, and registering a schema or a new
 * version of a subject (editors). Clients register through the Confluent Schema Registry API at
 * /schema-registry/teams/<team>/, under the same rules. Subjects are a team's: the list shows
 * the user's teams' with their team, a subject is opened in its team.
 */
export function SchemasPage({ subject, team }: { subject: string | null; team: string | null }) {
  const subjects = useSchemaSubjects();
  const list = subjects.data ?? [];
  const edit = useCan("edit");
  const canRegister = {
    allowed: edit.allowed,
    reason: edit.allowed ? "" : "Needs the editor role (register schemas).",
  };
  const [opened, setOpened] = useState<Opened | null>(null);
  const open = (initial: Draft, newVersion: boolean) => setOpened({ initial, newVersion, key: Date.now() });
  return (
    <div className="stack">
      <div className="row page-head">
        <h1>Schemas</h1>
        <button
          type="button"
          className="primary"
          disabled={!canRegister.allowed}
          title={canRegister.reason || undefined}
          onClick={() => open({ subject: "", schema_type: "AVRO", schema: starterSchema("AVRO", "") }, false)}
        >
          Register a schema
        </button>
      </div>
      <p className="muted small">
        Subjects and their versions (Avro, JSON Schema, Protobuf). Register one here, or let producers and consumers
        register and fetch them with Confluent's clients at <code>/schema-registry/teams/&lt;team&gt;/</code>.
      </p>
      {opened && (
        <RegisterSchemaForm
          key={opened.key}
          initial={opened.initial}
          newVersion={opened.newVersion}
          canRegister={canRegister}
          onClose={() => setOpened(null)}
        />
      )}
      <table className="table subjects" aria-label="Subjects">
        <thead>
          <tr>
            <th>Team</th>
            <th>Subject</th>
            <th>Type</th>
            <th>Latest version</th>
            <th>Schema id</th>
            <th>Versions</th>
            <th>Compatibility</th>
            <th>Updated</th>
          </tr>
        </thead>
        <tbody>
          {list.map((s) => (
            <tr
              key={`${s.team}/${s.name}`}
              aria-current={s.name === subject && (!team || s.team === team) ? "true" : undefined}
            >
              <td>{s.team}</td>
              <td className="subject-name" title={s.name}>
                <a href={href({ page: "schemas", subject: s.name, team: s.team })}>{s.name}</a>
              </td>
              <td>{s.schema_type}</td>
              <td>{s.latest_version}</td>
              <td>{s.latest_id}</td>
              <td>{s.versions}</td>
              <td>
                {s.compatibility}
                {!s.compatibility_set && <span className="muted small"> (global)</span>}
              </td>
              <td>{fmtTime(s.updated_at)}</td>
            </tr>
          ))}
          {!subjects.isPending && list.length === 0 && (
            <tr>
              <td colSpan={8} className="muted">
                No schema registered yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {subject && (
        <SubjectVersions
          subject={subject}
          team={team}
          canRegister={canRegister}
          onNewVersion={(latest) =>
            open(
              {
                team: team ?? "",
                subject,
                schema_type: latest.schema_type as SchemaType,
                schema: prettySchema(latest.schema_type, latest.schema),
              },
              true,
            )
          }
        />
      )}
    </div>
  );
}

function SubjectVersions(props: {
  subject: string;
  team: string | null;
  canRegister: { allowed: boolean; reason: string };
  onNewVersion: (latest: SchemaVersion) => void;
}) {
  const { subject, team } = props;
  const versions = useSchemaVersions(subject, team);
  const list = versions.data ?? [];
  const latest = list[list.length - 1];
  return (
    <section className="stack" aria-labelledby="subject-title">
      <div className="row page-head">
        <div>
          <h2 id="subject-title">{subject}</h2>
          {team && (
            <p className="muted small" data-testid="subject-team">
              team {team}
            </p>
          )}
        </div>
        {latest && (
          <button
            type="button"
            disabled={!props.canRegister.allowed}
            title={props.canRegister.reason || "Starts from the latest version's text."}
            onClick={() => {
              props.onNewVersion(latest);
              window.scrollTo({ top: 0 });
            }}
          >
            Register a new version
          </button>
        )}
      </div>
      {versions.error && <p className="notice small">{versions.error.message}</p>}
      <table className="table" aria-label="Versions">
        <thead>
          <tr>
            <th>Version</th>
            <th>Schema id</th>
            <th>Type</th>
            <th>Registered</th>
            <th>By</th>
          </tr>
        </thead>
        <tbody>
          {list.map((v) => (
            <tr key={v.version}>
              <td>{v.version}</td>
              <td>{v.id}</td>
              <td>{v.schema_type}</td>
              <td>{fmtTime(v.created_at)}</td>
              <td>{v.created_by || "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.length > 0 && <VersionCompare subject={subject} team={team} versions={list} />}
    </section>
  );
}

function VersionCompare({
  subject,
  team,
  versions,
}: {
  subject: string;
  team: string | null;
  versions: SchemaVersion[];
}) {
  const latest = versions[versions.length - 1]?.version ?? null;
  const previous = versions.length > 1 ? (versions[versions.length - 2]?.version ?? null) : latest;
  const [from, setFrom] = useState<number | null>(previous);
  const [to, setTo] = useState<number | null>(latest);
  useEffect(() => {
    setFrom(previous);
    setTo(latest);
  }, [subject, previous, latest]);
  const diff = useSchemaDiff(subject, from, to, team);
  const lines = diff.data ? diffLines(diff.data.diff) : [];
  const shown = versions.find((v) => v.version === to);
  return (
    <div className="compare stack">
      <div className="row">
        <VersionSelect label="From version" value={from} versions={versions} onChange={setFrom} />
        <VersionSelect label="To version" value={to} versions={versions} onChange={setTo} />
      </div>
      {diff.data && (
        <p className="small" role="status">
          {diff.data.backward.length === 0 ? "✓" : "✗"} v{to} reads data written with v{from} (backward) ·{" "}
          {diff.data.forward.length === 0 ? "✓" : "✗"} v{from} reads data written with v{to} (forward)
        </p>
      )}
      {diff.data && [...diff.data.backward, ...diff.data.forward].length > 0 && (
        <ul className="small">
          {[...diff.data.backward, ...diff.data.forward].map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
      <figure className="diff">
        <figcaption className="small muted">
          {from === to ? `Version ${to ?? ""}` : `Changes from version ${from ?? ""} to ${to ?? ""}`}
        </figcaption>
        <div className="diff-lines" aria-label="Schema diff">
          {from === to && shown
            ? prettySchema(shown.schema_type, shown.schema)
                .split("\n")
                .map((line, i) => (
                  <span key={i} className="diff-line">
                    {line}
                  </span>
                ))
            : lines.map((line, i) => (
                <span key={i} className={`diff-line ${line.kind === "hunk" ? "folded" : line.kind}`}>
                  {line.text}
                </span>
              ))}
          {from !== to && diff.data && lines.length === 0 && <span className="diff-line folded">No difference.</span>}
        </div>
      </figure>
    </div>
  );
}

function VersionSelect(props: {
  label: string;
  value: number | null;
  versions: SchemaVersion[];
  onChange: (v: number) => void;
}) {
  return (
    <label className="small">
      {props.label}{" "}
      <select
        value={props.value ?? ""}
        onChange={(e) => props.onChange(Number(e.target.value))}
        aria-label={props.label}
      >
        {props.versions.map((v) => (
          <option key={v.version} value={v.version}>
            {v.version}
          </option>
        ))}
      </select>
    </label>
  );
}
