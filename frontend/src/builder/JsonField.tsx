import type { FieldProps } from "@rjsf/utils";
import { useId, useState } from "react";

import { useFieldSuggestions } from "./FieldSuggestions";

/** A JSON editor for free-form config values (event patterns, templates, maps). */
export function JsonField(props: FieldProps) {
  const { formData, onChange, schema, name, fieldPathId, rawErrors, required, readonly, disabled } = props;
  const fallbackId = useId();
  const inputId = fieldPathId.$id || fallbackId;
  const external = formData === undefined ? "" : JSON.stringify(formData, null, 2);
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
    try {
      const parsed: unknown = JSON.parse(value);
      setParseError(null);
      onChange(parsed, fieldPathId.path);
    } catch (error) {
      setParseError(`Not valid JSON yet: ${(error as Error).message}`);
    }
  };
  const suggestions = useFieldSuggestions(text, typed);
  if (external !== lastExternal) {
    // The value changed from outside (undo, import): show it unless it is what we typed.
    setLastExternal(external);
    if (!sameJson(text, formData)) setText(external);
  }
  const title = (schema.title as string | undefined) ?? name;
  const example = Array.isArray(schema.examples) ? JSON.stringify(schema.examples[0]) : "";
  return (
    <div className="field json-field">
      <label htmlFor={inputId}>
        {title}
        {required ? " *" : ""} <span className="muted small">(JSON)</span>
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

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}
