import type { FieldProps } from "@rjsf/utils";

/** Whether a stage's security settings say anything beyond their defaults (a plaintext
 * connection): each value is compared with its field's default in the schema. */
export function securityInUse(value: unknown, defaults: Record<string, unknown> = {}): boolean {
  if (!value || typeof value !== "object") return false;
  return Object.entries(value as Record<string, unknown>).some(
    ([key, v]) => v !== undefined && v !== null && v !== "" && v !== (key in defaults ? defaults[key] : "PLAINTEXT"),
  );
}

function defaultsOf(schema: FieldProps["schema"]): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, { default?: unknown }>;
  return Object.fromEntries(Object.entries(properties).map(([key, field]) => [key, field?.default]));
}

/** A Kafka stage's SASL / TLS settings, folded away (one line) while the connection is plain:
 * a plaintext broker's form does not show a dozen fields it never uses. */
export function SecurityField(props: FieldProps) {
  const { registry, formData, uiSchema, schema } = props;
  const ObjectField = registry.fields.ObjectField;
  if (!ObjectField) return null;
  const used = securityInUse(formData, defaultsOf(schema));
  const { "ui:field": _field, ...inner } = uiSchema ?? {};
  void _field;
  return (
    <details className="security-field" open={used}>
      <summary>Security (SASL / TLS){used ? "" : ": none, plaintext"}</summary>
      <ObjectField {...props} uiSchema={inner} />
    </details>
  );
}
