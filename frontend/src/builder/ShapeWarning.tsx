import { unknownFields } from "./shape";
import { fieldsRead } from "./stageFields";
import { useShape } from "./useShape";

/** The fields a stage's config names that the channel's known shape (discovered schema or
 * picked subject) does not have: a warning on the node, not an error (the shape may not have
 * seen every event yet). */
export function ShapeWarning({ type, config }: { type: string; config: Record<string, unknown> }) {
  const shape = useShape();
  if (shape.fields.length === 0) return null;
  const missing = unknownFields(fieldsRead(type, config), shape.fields);
  if (missing.length === 0) return null;
  const from = shape.origin === "discovered" ? "the discovered schema" : `the schema ${shape.origin}`;
  return (
    <div
      className="stage-warning small"
      role="status"
      data-testid="unknown-field-warning"
      title={`Not in ${from}: ${missing.join(", ")}`}
    >
      ⚠ unknown field{missing.length > 1 ? "s" : ""}: {missing.join(", ")}
    </div>
  );
}
