import { stageFieldPaths } from "./shape";
import { sqlFieldPaths } from "./sqlFields";

/** The fields a stage's config reads (the fields it writes are not checked): its field
 * paths by stage type (shape.ts), and for a `sql` transform the paths its expressions read. */
export function fieldsRead(type: string, config: Record<string, unknown>): string[] {
  if (type === "sql") {
    const expressions = Array.isArray(config.expressions) ? config.expressions : [];
    return sqlFieldPaths(expressions.filter((e): e is string => typeof e === "string"));
  }
  return stageFieldPaths(type, config);
}
