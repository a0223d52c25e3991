import type { FieldProps } from "@rjsf/utils";
import { useId } from "react";

import { FIELD_PATH_KEY } from "../graph/schema";
import { useFieldSuggestions } from "./FieldSuggestions";

/** A single text holding a path into the event (a Kafka sink's key or topic field, a field
 * operation's field, enrich's input): the known fields are suggested as it is typed, as a
 * dotted path or, for an input path, as `$.…`. */
export function FieldPathField(props: FieldProps) {
  const { formData, onChange, schema, name, fieldPathId, rawErrors, required, readonly, disabled } = props;
  const fallbackId = useId();
  const inputId = fieldPathId.$id || fallbackId;
  const text = typeof formData === "string" ? formData : "";
  const typed = (value: string) => onChange(value === "" ? undefined : value, fieldPathId.path);
  const as = schema[FIELD_PATH_KEY] === "jsonpath" ? "jsonpath" : "path";
  const suggestions = useFieldSuggestions(text, typed, as);
  const title = (schema.title as string | undefined) ?? name;
  const example = Array.isArray(schema.examples) ? String(schema.examples[0]) : "";
  return (
    <div className="field">
      <label htmlFor={inputId}>
        {title}
        {required ? " *" : ""}
      </label>
      {schema.description && <p className="small muted">{schema.description}</p>}
      <input
        id={inputId}
        value={text}
        readOnly={readonly}
        disabled={disabled}
        placeholder={example}
        spellCheck={false}
        autoComplete="off"
        aria-invalid={Boolean(rawErrors?.length)}
        {...suggestions.inputProps}
        onChange={(event) => typed(event.target.value)}
      />
      {suggestions.list}
    </div>
  );
}
