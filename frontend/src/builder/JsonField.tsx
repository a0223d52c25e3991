import type { FieldProps } from "@rjsf/utils";
import { useId, useState } from "react";

import { useFieldSuggestions } from "./FieldSuggestions";
import { acceptsText, readTyped, shownText } from "./jsonText";

/** A JSON editor for free-form config values (event patterns, templates, maps). */
export function JsonField(props: FieldProps) {
  const { formData, onChange, schema, name, fieldPathId, rawErrors, required, readonly, disabled } = props;
  const fallbackId = useId();
  const inputId = fieldPathId.$id || fallbackId;
  const external = shownText(formData, schema);
  const [text, setText] = useState(external);
  const [lastExternal, setLastExternal] = useState(external);
  const [parseError, setParseError] = useState<string | null>(null);
  const typed = (value: string) => {
    setText(value);
    if (value.trim() === "") {
      setParseError(null);
      onChange(undefined, fieldPathId.path);
      return;
    }
    const reading = readTyped(value, schema);
    if ("error" in reading) {
      setParseError(reading.error);
      return;
    }
    setParseError(null);
    onChange(reading.value, fieldPathId.path);
  };
  const suggestions = useFieldSuggestions(text, typed);
  if (external !== lastExternal) {
    // The value changed from outside (undo, import): show it unless it is what we typed.
    setLastExternal(external);
    if (!sameValue(text, formData, schema)) setText(external);
  }
  const title = (schema.title as string | undefined) ?? name;
  const example = Array.isArray(schema.examples) ? JSON.stringify(schema.examples[0]) : "";
  return (
    <div className="field json-field">
      <label htmlFor={inputId}>
        {title}
        {required ? " *" : ""} <span className="muted small">{acceptsText(schema) ? "(text or JSON)" : "(JSON)"}</span>
      </label>
      {schema.description && <p className="small muted">{schema.description}</p>}
      <textarea
        id={inputId}
        rows={Math.min(12, Math.max(3, text.split("\n").length))}
        value={text}
        spellCheck={false}
        readOnly={readonly}
        disabled={disabled}
        placeholder={example}
        aria-invalid={Boolean(parseError || rawErrors?.length)}
        {...suggestions.inputProps}
        onChange={(event) => typed(event.target.value)}
      />
      {suggestions.list}
      {parseError && <p className="error small">{parseError}</p>}
    </div>
  );
}

function sameValue(text: string, value: unknown, schema: FieldProps["schema"]): boolean {
  const reading = readTyped(text, schema);
  return "value" in reading && JSON.stringify(reading.value) === JSON.stringify(value);
}
