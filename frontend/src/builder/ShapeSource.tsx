import { useSchemaSubjects } from "../schemas/hooks";
import { useBuilder } from "./store";
import { pickSubject, useShape } from "./useShape";

/** Which schema the builder checks field names against: the channel's discovered schema, or
 * a registry subject picked for its source. */
export function ShapeSource() {
  const name = useBuilder((s) => s.name);
  const team = useBuilder((s) => s.team);
  const shape = useShape();
  // The channel's team's subjects: its wire formats resolve subjects in its team's registry.
  const subjects = (useSchemaSubjects().data ?? []).filter((s) => !team || s.team === team);
  return (
    <fieldset className="errors-policy">
      <legend>Shape of the events</legend>
      <label className="field">
        <span>Field names come from</span>
        <select
          value={shape.subject}
          onChange={(e) => pickSubject(name, e.target.value)}
          aria-label="Shape of the events"
        >
          <option value="">the channel&apos;s discovered schema</option>
          {subjects.map((s) => (
            <option key={`${s.team}/${s.name}`} value={s.name}>
              registry subject {s.name} ({s.schema_type})
            </option>
          ))}
        </select>
      </label>
      {shape.messages.length > 1 && (
        <label className="field">
          <span>Protobuf message</span>
          <select
            value={shape.message}
            onChange={(e) => pickSubject(name, shape.subject, e.target.value)}
            aria-label="Protobuf message"
          >
            {shape.messages.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
      )}
      <p className="small muted">
        {shape.fields.length > 0
          ? `${shape.fields.length} known fields: patterns and transforms naming others are marked on their node.`
          : "No schema known yet: turn discovery on for the channel (its page) or pick a registry subject (JSON Schema, Avro or Protobuf)."}
      </p>
    </fieldset>
  );
}
