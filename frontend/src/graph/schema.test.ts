import { describe, expect, it } from "vitest";

import { cleanConfig, isFieldPath, isFreeJson, simplifySchema, uiSchemaFor } from "./schema";

const kafkaLike = {
  $defs: {
    Security: {
      type: "object",
      properties: {
        username: { anyOf: [{ type: "string" }, { type: "null" }], default: null, title: "User" },
        password: {
          anyOf: [{ type: "string", format: "password", writeOnly: true }, { type: "null" }],
          default: null,
        },
      },
    },
  },
  type: "object",
  required: ["topic"],
  properties: {
    bootstrap: { type: "string" },
    topic: { type: "string" },
    security: { anyOf: [{ $ref: "#/$defs/Security" }, { type: "null" }], default: null },
    pattern: { type: "object", additionalProperties: true },
    topics: { anyOf: [{ type: "array", items: { type: "string" } }, { type: "null" }], default: null },
    template: { $ref: "#/$defs/Missing" },
    start: {
      anyOf: [
        { enum: ["earliest", "latest"], type: "string" },
        { type: "object", properties: { t: { type: "integer" } } },
      ],
      default: "latest",
      title: "Start",
    },
  },
};

describe("simplifySchema", () => {
  it("inlines refs and reads Optional[X] as X", () => {
    const simple = simplifySchema(kafkaLike);
    expect(simple.$defs).toBeUndefined();
    const security = (simple.properties as Record<string, Record<string, unknown>>).security!;
    expect(security.type).toBe("object");
    expect(security.default).toBeUndefined();
    const props = security.properties as Record<string, Record<string, unknown>>;
    expect(props.username).toEqual({ type: "string", title: "User" });
    expect(props.password!.writeOnly).toBe(true);
  });

  it("reads a union as any JSON value", () => {
    const start = (simplifySchema(kafkaLike).properties as Record<string, unknown>).start;
    // Marked: one of its options is text, which its editor takes as typed (`earliest`).
    expect(start).toEqual({ title: "Start", default: "latest", "x-text-too": true });
  });
});

describe("uiSchemaFor", () => {
  it("hides secrets, edits free JSON as JSON and puts required fields first", () => {
    const ui = uiSchemaFor(simplifySchema(kafkaLike));
    expect(ui["ui:order"]).toEqual(["topic", "bootstrap", "security", "pattern", "topics", "template", "start"]);
    expect(ui.start).toEqual({ "ui:field": "json", "ui:label": false });
    expect(ui.topics).toEqual({ "ui:field": "stringList", "ui:label": false });
    expect((ui.security as Record<string, Record<string, string>>).password!["ui:widget"]).toBe("password");
    expect(ui.pattern).toEqual({ "ui:field": "json", "ui:label": false });
    expect(ui.template).toEqual({ "ui:field": "json", "ui:label": false });
  });

  it("types a path into the event (marked by the server) with the known fields suggested", () => {
    const sink = {
      type: "object",
      properties: {
        topic: { type: "string" },
        key_field: {
          anyOf: [{ type: "string" }, { type: "null" }],
          default: null,
          "x-sluice-field-path": "read",
        },
      },
    };
    const simple = simplifySchema(sink);
    const props = simple.properties as Record<string, Record<string, unknown>>;
    expect(isFieldPath(props.key_field!)).toBe(true);
    expect(isFieldPath(props.topic!)).toBe(false);
    const ui = uiSchemaFor(simple);
    expect(ui.key_field).toEqual({ "ui:field": "fieldPath", "ui:label": false });
    expect(ui.topic).toBeUndefined();
  });

  it("knows free JSON", () => {
    expect(isFreeJson({})).toBe(true);
    expect(isFreeJson({ type: "object" })).toBe(true);
    expect(isFreeJson({ type: "string" })).toBe(false);
    expect(isFreeJson({ enum: ["a"] })).toBe(false);
    expect(isFreeJson({ oneOf: [{ type: "object", properties: {} }] })).toBe(false);
  });
});

describe("unions of objects", () => {
  const httpLike = {
    $defs: {
      None: { type: "object", properties: { type: { const: "none", type: "string" } } },
      Basic: {
        type: "object",
        properties: {
          type: { const: "basic", type: "string" },
          username: { type: "string" },
          password: { type: "string", format: "password", writeOnly: true },
        },
      },
    },
    type: "object",
    properties: {
      auth: {
        oneOf: [{ $ref: "#/$defs/None" }, { $ref: "#/$defs/Basic" }],
        discriminator: { propertyName: "type", mapping: { none: "#/$defs/None" } },
        default: { type: "none" },
      },
    },
  };

  it("stay unions, with secrets as password inputs", () => {
    const simple = simplifySchema(httpLike);
    const auth = (simple.properties as Record<string, Record<string, unknown>>).auth!;
    expect((auth.oneOf as unknown[]).length).toBe(2);
    expect(auth.discriminator).toEqual({ propertyName: "type" });
    const ui = uiSchemaFor(simple);
    expect((ui.auth as Record<string, Record<string, string>>).password!["ui:widget"]).toBe("password");
    expect((ui.auth as Record<string, Record<string, string>>).type!["ui:widget"]).toBe("hidden");
  });
});

describe("cleanConfig", () => {
  it("drops undefined values", () => {
    expect(cleanConfig({ a: undefined, b: { c: undefined, d: 1 }, e: [1] })).toEqual({
      b: { d: 1 },
      e: [1],
    });
  });
});
