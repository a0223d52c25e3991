/**
 * The words of the "Register a schema" form: what registering will do (POST schemas/check),
 * what it did (POST schemas/), and each refusal where it belongs (a 400's field paths, the
 * registry's 409 with its level and incompatibilities).
 */

import { ApiError } from "../api/client";
import type { components } from "../api/schema";
import type { FieldErrors } from "../api/types";

export type Registration = components["schemas"]["RegistrationRequest"];
export type RegistrationCheck = components["schemas"]["RegistrationCheck"];
export type Registered = components["schemas"]["Registered"];
export type Incompatible = components["schemas"]["Incompatible"];
export type SchemaType = NonNullable<Registration["schema_type"]>;

export const SCHEMA_TYPES: { value: SchemaType; label: string; hint: string }[] = [
  { value: "AVRO", label: "Avro", hint: "The Avro schema as JSON (a record, an enum, a type name…)." },
  { value: "JSON", label: "JSON Schema", hint: "The JSON Schema document." },
  {
    value: "PROTOBUF",
    label: "Protobuf",
    hint: "The file as a base64 serialized FileDescriptorProto, as confluent-kafka's serializers send it (not .proto text).",
  },
];

/** A first text for a new subject's schema, by type (Protobuf has none: it is base64). */
export function starterSchema(type: SchemaType, subject: string): string {
  const name = recordName(subject);
  if (type === "AVRO")
    return JSON.stringify({ type: "record", name, fields: [{ name: "id", type: "string" }] }, null, 2);
  if (type === "JSON")
    return JSON.stringify({ type: "object", title: name, properties: { id: { type: "string" } } }, null, 2);
  return "";
}

/** ``orders-value`` → ``Orders``: a record name Avro accepts, from the subject. */
export function recordName(subject: string): string {
  const base = subject.replace(/-(value|key)$/, "");
  const words = base.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const joined = words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");
  return /^[A-Za-z_]/.test(joined) ? joined : `Record${joined}`;
}

/** What registering will do, in one sentence, and whether it will be accepted. */
export function checkSentence(check: RegistrationCheck): { accepted: boolean; text: string } {
  const { subject, compatibility } = check;
  if (check.registered_version !== null)
    return {
      accepted: true,
      text: `${subject} already has this schema as version ${check.registered_version}: registering it again changes nothing.`,
    };
  if (!check.compatible)
    return {
      accepted: false,
      text: `Not compatible with ${subject}'s versions under ${compatibility}: registering will be refused.`,
    };
  if (!check.exists)
    return {
      accepted: true,
      text: `${subject} is a new subject: this schema will be its version 1. Later versions are checked under ${compatibility}.`,
    };
  return {
    accepted: true,
    text: `Compatible with ${subject}'s versions under ${compatibility}: this schema will be version ${check.next_version ?? "?"}.`,
  };
}

/** What registering did. */
export function registeredSentence(result: Registered): string {
  const { subject, version, id } = result.version;
  return result.created
    ? `Registered ${subject} version ${version} (schema id ${id}).`
    : `${subject} already had this schema as version ${version} (schema id ${id}): nothing new was registered.`;
}

export interface Failure {
  /** Messages by form field (subject, schema_type, schema, references…). */
  fields: FieldErrors;
  /** The registry's refusal under the subject's compatibility level (409). */
  incompatible: Incompatible | null;
  /** Anything else (permission, network), in a sentence each. */
  other: string[];
}

export const FORM_FIELDS = ["team", "subject", "schema_type", "schema"] as const;

/** A failed check or registration, sorted by where the form shows it. */
export function registrationFailure(error: unknown): Failure {
  const failure: Failure = { fields: {}, incompatible: null, other: [] };
  if (!(error instanceof ApiError)) {
    failure.other.push(error instanceof Error ? error.message : String(error));
    return failure;
  }
  if (error.status === 409 && isIncompatible(error.body)) {
    failure.incompatible = error.body;
    return failure;
  }
  if (error.status === 400) {
    for (const [path, messages] of Object.entries(error.fieldErrors())) {
      const field = FORM_FIELDS.find((f) => path === f);
      if (field) failure.fields[field] = messages;
      else failure.other.push(...messages.map((m) => (path === "non_field_errors" ? m : `${path}: ${m}`)));
    }
    return failure;
  }
  failure.other.push(error.message);
  return failure;
}

function isIncompatible(body: unknown): body is Incompatible {
  return typeof body === "object" && body !== null && "problems" in body && "detail" in body;
}
