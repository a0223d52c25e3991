import Form from "@rjsf/core";
import type { ErrorSchema, RJSFSchema } from "@rjsf/utils";
import validator from "@rjsf/validator-ajv8";
import { useMemo } from "react";

import type { Plugin } from "../api/types";
import { cleanConfig, simplifySchema, uiSchemaFor } from "../graph/schema";
import { toFormErrors } from "../graph/spec";
import { FieldPathField } from "./FieldPathField";
import { InsertAsContext, type InsertAs } from "./FieldSuggestions";
import { JsonField } from "./JsonField";
import { SecurityField } from "./SecurityField";
import { StringListField } from "./StringListField";

const fields = { json: JsonField, stringList: StringListField, fieldPath: FieldPathField, security: SecurityField };

interface Props {
  /** The plugin (or a rule: graph/rules.ts RULE_SCHEMA) whose config_schema the form follows. */
  plugin: Pick<Plugin, "config_schema">;
  config: Record<string, unknown>;
  errors: Record<string, string[]> | undefined;
  onChange: (config: Record<string, unknown>) => void;
  idPrefix: string;
  /** The stage's type (or "rule"): how field-path suggestions are inserted. */
  stageType?: string;
}

/**
 * The config form of a stage, generated from the plugin's JSON Schema. The server checks
 * what is typed (validation as you go); its messages show next to their fields.
 */
export function StageForm({ plugin, config, errors, onChange, idPrefix, stageType }: Props) {
  const schema = useMemo(() => {
    const simple = simplifySchema(plugin.config_schema);
    // The panel shows the plugin's title and description already.
    delete simple.title;
    delete simple.description;
    return simple as RJSFSchema;
  }, [plugin]);
  const uiSchema = useMemo(() => ({ ...uiSchemaFor(schema), "ui:submitButtonOptions": { norender: true } }), [schema]);
  const extraErrors = useMemo(() => toFormErrors(errors ?? {}), [errors]);
  const insertAs: InsertAs =
    stageType === "filter" || stageType === "rule"
      ? "segment"
      : stageType === "input-transformer" || stageType === "input_transformer"
        ? "jsonpath"
        : "path";
  return (
    <InsertAsContext.Provider value={insertAs}>
      <Form
        schema={schema}
        uiSchema={uiSchema}
        formData={config}
        validator={validator}
        fields={fields}
        idPrefix={idPrefix}
        extraErrors={extraErrors as ErrorSchema}
        showErrorList={false}
        noHtml5Validate
        onChange={(event) => onChange(cleanConfig(event.formData ?? {}) as Record<string, unknown>)}
        onSubmit={() => undefined}
      />
    </InsertAsContext.Provider>
  );
}
