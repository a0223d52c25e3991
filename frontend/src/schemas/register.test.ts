import { describe, expect, it } from "vitest";

import { ApiError } from "../api/client";
import { checkSentence, recordName, registeredSentence, registrationFailure, starterSchema } from "./register";

const check = {
  team: "default",
  subject: "orders-value",
  exists: true,
  compatibility: "BACKWARD",
  compatible: true,
  problems: [],
  registered_version: null,
  next_version: 3,
};

describe("the register form's words", () => {
  it("says before registering what it will do", () => {
    expect(checkSentence(check)).toEqual({
      accepted: true,
      text: "Compatible with orders-value's versions under BACKWARD: this schema will be version 3.",
    });
    expect(checkSentence({ ...check, exists: false, next_version: 1 }).text).toBe(
      "orders-value is a new subject: this schema will be its version 1. Later versions are checked under BACKWARD.",
    );
    expect(checkSentence({ ...check, registered_version: 2, next_version: null }).text).toBe(
      "orders-value already has this schema as version 2: registering it again changes nothing.",
    );
    const refused = checkSentence({
      ...check,
      compatible: false,
      next_version: null,
      problems: ["READER_FIELD_MISSING_DEFAULT_VALUE …"],
    });
    expect(refused).toEqual({
      accepted: false,
      text: "Not compatible with orders-value's versions under BACKWARD: registering will be refused.",
    });
  });

  it("says after registering what it did", () => {
    const version = {
      subject: "orders-value",
      version: 3,
      id: 17,
      schema_type: "AVRO",
      schema: "{}",
      references: [],
      deleted: false,
      created_at: "2026-11-30T08:00:00Z",
      created_by: "alice",
    };
    expect(registeredSentence({ team: "default", created: true, version })).toBe(
      "Registered orders-value version 3 (schema id 17).",
    );
    expect(registeredSentence({ team: "default", created: false, version })).toBe(
      "orders-value already had this schema as version 3 (schema id 17): nothing new was registered.",
    );
  });

  it("puts a 400's messages at their fields and the rest apart", () => {
    const error = new ApiError(
      400,
      {
        schema: ["Invalid schema: Expecting value: line 1 column 2"],
        "references[0].version": ["This field is required."],
      },
      "HTTP 400",
    );
    expect(registrationFailure(error)).toEqual({
      fields: { schema: ["Invalid schema: Expecting value: line 1 column 2"] },
      incompatible: null,
      other: ["references[0].version: This field is required."],
    });
  });

  it("keeps the registry's 409 whole: its words, level and each incompatibility", () => {
    const body = {
      detail: 'Schema being registered is incompatible with an earlier schema for subject "orders-value", details: […]',
      compatibility: "BACKWARD",
      problems: ["READER_FIELD_MISSING_DEFAULT_VALUE: region"],
    };
    expect(registrationFailure(new ApiError(409, body, "x"))).toEqual({ fields: {}, incompatible: body, other: [] });
    expect(
      registrationFailure(new ApiError(403, { detail: "You need the editor role" }, "You need the editor role")).other,
    ).toEqual(["You need the editor role"]);
    expect(registrationFailure(new Error("network down")).other).toEqual(["network down"]);
  });

  it("starts a new subject with a schema of its type", () => {
    expect(recordName("orders-value")).toBe("Orders");
    expect(recordName("com.acme.payment-events-key")).toBe("ComAcmePaymentEvents");
    expect(recordName("9lives")).toBe("Record9lives");
    expect(JSON.parse(starterSchema("AVRO", "orders-value"))).toEqual({
      type: "record",
      name: "Orders",
      fields: [{ name: "id", type: "string" }],
    });
    expect(JSON.parse(starterSchema("JSON", "orders-value")).type).toBe("object");
    expect(starterSchema("PROTOBUF", "orders-value")).toBe("");
  });
});
