import { useState } from "react";

import { useMe } from "../api/hooks";
import { href } from "../router";
import { useCheckRegistration, useRegisterSchema } from "./hooks";
import {
  checkSentence,
  type Failure,
  registeredSentence,
  registrationFailure,
  type Registered,
  type Registration,
  type RegistrationCheck,
  SCHEMA_TYPES,
  type SchemaType,
  starterSchema,
} from "./register";

export interface Draft {
  /** The team whose registry it goes to ("" or absent: the one team where the user may). */
  team?: string;
  subject: string;
  schema_type: SchemaType;
  schema: string;
}

const NO_FAILURE: Failure = { fields: {}, incompatible: null, other: [] };

/**
 * Register a schema, or a new version of a subject (``newVersion``: the subject is fixed and
 * the latest version's text is the start). "Check compatibility" says what registering will
 * do (the version it becomes, or why the subject's level refuses it) before anything is
 * stored; "Register" stores it under the same rules and says what it did. A refusal shows at
 * its field, the registry's incompatibility message verbatim. Editors only (the server checks).
 */
export function RegisterSchemaForm(props: {
  initial: Draft;
  newVersion: boolean;
  canRegister: { allowed: boolean; reason: string };
  onClose: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(props.initial);
  const [checked, setChecked] = useState<RegistrationCheck | null>(null);
  const [done, setDone] = useState<Registered | null>(null);
  const [failure, setFailure] = useState<Failure>(NO_FAILURE);
  const check = useCheckRegistration();
  const register = useRegisterSchema();
  const busy = check.isPending || register.isPending;

  const edit = (next: Partial<Draft>) => {
    setDraft({ ...draft, ...next });
    // What was said was about the text before this edit.
    setChecked(null);
    setDone(null);
    setFailure(NO_FAILURE);
  };
  const body = (): Registration => ({
    ...(draft.team ? { team: draft.team } : {}),
    subject: draft.subject,
    schema_type: draft.schema_type,
    schema: draft.schema,
  });
  // A new subject's team, asked only of a user in more than one (editors register, any role checks).
  const teams = (useMe().data?.teams ?? []).map((t) => t.name);

  const runCheck = () => {
    setDone(null);
    check.mutate(body(), {
      onSuccess: (answer) => {
        setChecked(answer);
        setFailure(NO_FAILURE);
      },
      onError: (error) => {
        setChecked(null);
        setFailure(registrationFailure(error));
      },
    });
  };
  const runRegister = () => {
    register.mutate(body(), {
      onSuccess: (answer) => {
        setDone(answer);
        setChecked(null);
        setFailure(NO_FAILURE);
      },
      onError: (error) => {
        // The refusal says it all now: the check's sentence above it would repeat it.
        setDone(null);
        setChecked(null);
        setFailure(registrationFailure(error));
      },
    });
  };

  const type = SCHEMA_TYPES.find((t) => t.value === draft.schema_type) ?? SCHEMA_TYPES[0]!;
  const said = checked ? checkSentence(checked) : null;
  return (
    <section className="register-schema" aria-labelledby="register-title">
      <h2 id="register-title">
        {props.newVersion ? `Register a new version of ${draft.subject}` : "Register a schema"}
      </h2>
      <p className="muted small">
        Registering stores the schema as the subject's next version, after the check its compatibility level makes
        against the versions it has (the rules of <code>/schema-registry/</code>). A version cannot be edited
        afterwards, only deleted.
      </p>
      <form
        className="register-form"
        onSubmit={(e) => {
          e.preventDefault();
          runRegister();
        }}
      >
        {!props.newVersion && teams.length > 1 && (
          <Field id="register-team" label="Team" error={failure.fields.team} hint="The team whose registry it goes to.">
            <select
              id="register-team"
              value={draft.team ?? ""}
              aria-describedby="register-team-note"
              onChange={(e) => edit({ team: e.target.value })}
            >
              <option value="">Choose the team…</option>
              {teams.map((name) => (
                <option key={name} value={name}>
                  {name}
                </option>
              ))}
            </select>
          </Field>
        )}
        <Field
          id="register-subject"
          label="Subject"
          error={failure.fields.subject}
          hint={
            props.newVersion
              ? "The subject the version is added to."
              : "Confluent's naming: <topic>-value, <topic>-key or a record name. A new name creates the subject."
          }
        >
          <input
            id="register-subject"
            value={draft.subject}
            readOnly={props.newVersion}
            placeholder="orders-value"
            autoComplete="off"
            spellCheck={false}
            aria-invalid={Boolean(failure.fields.subject)}
            aria-describedby="register-subject-note"
            onChange={(e) => edit({ subject: e.target.value })}
          />
        </Field>
        <Field id="register-type" label="Schema type" error={failure.fields.schema_type} hint={type.hint}>
          <select
            id="register-type"
            value={draft.schema_type}
            aria-invalid={Boolean(failure.fields.schema_type)}
            aria-describedby="register-type-note"
            onChange={(e) => {
              const next = e.target.value as SchemaType;
              // A text nobody typed yet follows the type; typed text is kept.
              const untouched = draft.schema === "" || draft.schema === starterSchema(draft.schema_type, draft.subject);
              edit({ schema_type: next, ...(untouched ? { schema: starterSchema(next, draft.subject) } : {}) });
            }}
          >
            {SCHEMA_TYPES.map((t) => (
              <option key={t.value} value={t.value}>
                {t.label}
              </option>
            ))}
          </select>
        </Field>
        <Field
          id="register-schema"
          label="Schema"
          error={failure.fields.schema}
          hint="Checked by the registry's own parser when you check or register."
        >
          <textarea
            id="register-schema"
            rows={14}
            value={draft.schema}
            spellCheck={false}
            aria-invalid={Boolean(failure.fields.schema)}
            aria-describedby="register-schema-note"
            onChange={(e) => edit({ schema: e.target.value })}
          />
        </Field>
        <div className="row">
          <button type="button" onClick={runCheck} disabled={busy || draft.subject === "" || draft.schema === ""}>
            Check compatibility
          </button>
          <button
            type="submit"
            className="primary"
            disabled={busy || !props.canRegister.allowed || draft.subject === "" || draft.schema === ""}
            title={props.canRegister.reason || undefined}
          >
            Register
          </button>
          <button type="button" onClick={props.onClose}>
            Close
          </button>
          {!props.canRegister.allowed && <span className="muted small">{props.canRegister.reason}</span>}
        </div>
      </form>
      <div role="status" aria-live="polite" data-testid="register-status">
        {said && (
          <p className={said.accepted ? "small" : "small error"}>
            {said.accepted ? "✓ " : "✗ "}
            {said.text}
          </p>
        )}
        {checked && checked.problems.length > 0 && <Problems problems={checked.problems} />}
        {done && (
          <p className="small">
            ✓ {registeredSentence(done)}{" "}
            <a href={href({ page: "schemas", subject: done.version.subject, team: done.team })}>
              Show {done.version.subject}
            </a>
          </p>
        )}
      </div>
      {failure.incompatible && (
        <div role="alert" data-testid="register-refused">
          <p className="small error">
            ✗ Not registered: {draft.subject}'s compatibility level {failure.incompatible.compatibility} refuses this
            schema.
          </p>
          <Problems problems={failure.incompatible.problems} />
          <p className="small muted">
            The registry said: <code>{failure.incompatible.detail}</code>
          </p>
        </div>
      )}
      {failure.other.length > 0 && (
        <ul className="error small" role="alert">
          {failure.other.map((m) => (
            <li key={m}>{m}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Problems({ problems }: { problems: string[] }) {
  return (
    <ul className="small register-problems" aria-label="Incompatibilities">
      {problems.map((p) => (
        <li key={p}>{p}</li>
      ))}
    </ul>
  );
}

/** A labelled control with its server error (or its hint) right under it. */
function Field(props: {
  id: string;
  label: string;
  error: string[] | undefined;
  hint: string;
  children: React.ReactNode;
}) {
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      {props.children}
      {/* A div: the field's direct spans are its bold titles. */}
      <div id={`${props.id}-note`} className={props.error ? "error small" : "muted small"}>
        {props.error ? props.error.join(" ") : props.hint}
      </div>
    </div>
  );
}
