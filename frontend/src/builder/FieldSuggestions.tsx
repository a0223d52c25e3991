import { createContext, useContext, useState } from "react";

import "./shape.css";

import { suggest, wordAt, type FieldPath } from "./shape";
import { useShape } from "./useShape";

/** How an editor inserts a suggested path: a pattern's JSON keys take the field's last
 * segment, an input path `$.…`, everything else the dotted path. */
export type InsertAs = "segment" | "jsonpath" | "path";

/** The insertion style of the form being edited (set by StageForm from the stage type). */
export const InsertAsContext = createContext<InsertAs>("path");

export function insertText(field: FieldPath, as: InsertAs): string {
  if (as === "segment") return field.path.split(".").pop() ?? field.path;
  if (as === "jsonpath") return `$.${field.path}`;
  return field.path;
}

/**
 * Autocompletion of field paths for a text box: the known fields (useShape) matching the
 * word at the caret, listed under the box while it has focus; a click or Enter on one puts
 * it in place of the word.
 */
export function useFieldSuggestions(text: string, setText: (next: string) => void, insertAs?: InsertAs) {
  const shape = useShape();
  const formAs = useContext(InsertAsContext);
  const as = insertAs ?? formAs;
  const [caret, setCaret] = useState<number | null>(null);
  const word = caret === null ? null : wordAt(text, caret);
  const options = word && shape.fields.length ? suggest(shape.fields, word.word) : [];
  const track = (el: HTMLInputElement | HTMLTextAreaElement) => setCaret(el.selectionStart ?? el.value.length);
  const choose = (field: FieldPath) => {
    if (!word || caret === null) return;
    setText(text.slice(0, word.start) + insertText(field, as) + text.slice(caret));
    setCaret(null);
  };
  const inputProps = {
    onKeyUp: (e: React.KeyboardEvent<HTMLInputElement | HTMLTextAreaElement>) => track(e.currentTarget),
    onClick: (e: React.MouseEvent<HTMLInputElement | HTMLTextAreaElement>) => track(e.currentTarget),
    onBlur: () => window.setTimeout(() => setCaret(null), 150),
  };
  const list =
    options.length > 0 ? (
      <ul className="field-suggestions" role="listbox" aria-label="Known fields" data-testid="field-suggestions">
        {options.map((field) => (
          <li key={field.path}>
            <button
              type="button"
              role="option"
              aria-selected={false}
              onMouseDown={(e) => {
                e.preventDefault();
                choose(field);
              }}
            >
              <code>{field.path}</code> <span className="muted small">{field.types.join(" | ")}</span>
            </button>
          </li>
        ))}
        <li className="muted small">from {shape.origin === "discovered" ? "the discovered schema" : shape.origin}</li>
      </ul>
    ) : null;
  return { inputProps, list };
}
