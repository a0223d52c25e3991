import type { FieldProps } from "@rjsf/utils";
import { useId, useState } from "react";

import { useFieldSuggestions } from "./FieldSuggestions";

/** A list of strings (Kafka topics, field paths) typed as one comma-separated line. */
export function StringListField(props: FieldProps) {
  const { formData, onChange, schema, name, fieldPathId, rawErrors, required, readonly, disabled } = props;
  const fallbackId = useId();
  const inputId = fieldPathId.$id || fallbackId;
  const external = Array.isArray(formData) ? formData.join(", ") : "";
  const [text, setText] = useState(external);
  const [lastExternal, setLastExternal] = useState(external);
  if (external !== lastExternal) {
    setLastExternal(external);
    if (splitList(text).join(", ") !== external) setText(external);
  }
  const typed = (value: string) => {
    setText(value);
    const items = splitList(value);
    onChange(items.length > 0 ? items : undefined, fieldPathId.path);
  };
  const suggestions = useFieldSuggestions(text, typed);
  const title = (schema.title as string | undefined) ?? name;
  return (
    <div className="field">
      <label htmlFor={inputId}>
        {title}
        {required ? " *" : ""} <span className="muted small">(comma-separated)</span>
      </label>
      {schema.description && <p className="small muted">{schema.description}</p>}
      <input
        id={inputId}
        value={text}
        readOnly={readonly}
        disabled={disabled}
        aria-invalid={Boolean(rawErrors?.length)}
        {...suggestions.inputProps}
        onChange={(event) => typed(event.target.value)}
      />
      {suggestions.list}
    </div>
  );
}

export function splitList(text: string): string[] {
  return text
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}
