/**
 * Where the builder learns the shape of the channel's events: the schema discovered from its
 * live events (GET /api/v1/channels/{name}/discovery), or the latest version of a registry
 * subject the user picked for the source (kept per channel in this browser), as the server
 * turns it into the JSON Schema of the payload (GET /api/v1/schemas/{name}/shape: a JSON
 * Schema as it is, an Avro record or a Protobuf message as the value its wire format decodes
 * to).
 */

import { useQuery } from "@tanstack/react-query";
import { useMemo, useSyncExternalStore } from "react";

import { api } from "../api/client";
import type { components } from "../api/schema";
import { useSubjectShape } from "../schemas/hooks";
import { asEventSchema, fieldPaths, type FieldPath, type JsonSchema } from "./shape";
import { useBuilder } from "./store";

/** GET /api/v1/channels/{name}/discovery (its `schema`: a JSON Schema object, or null). */
export type ChannelDiscovery = Omit<components["schemas"]["ChannelDiscovery"], "schema"> & {
  schema: JsonSchema | null;
};

export function useDiscovery(name: string, enabled: boolean, poll = false) {
  return useQuery({
    queryKey: ["discovery", name],
    queryFn: () => api<ChannelDiscovery>(`channels/${encodeURIComponent(name)}/discovery`),
    enabled: enabled && name !== "",
    refetchInterval: poll ? 5000 : false,
  });
}

const KEY = (channel: string) => `sluice.shape-subject.${channel || "(new)"}`;
const MESSAGE_KEY = (channel: string) => `sluice.shape-message.${channel || "(new)"}`;
const listeners = new Set<() => void>();

function stored(key: string): string {
  try {
    return window.localStorage.getItem(key) ?? "";
  } catch {
    return "";
  }
}

/** The registry subject picked as the shape of a channel's source ("" for none). */
export function pickedSubject(channel: string): string {
  return stored(KEY(channel));
}

/** Pick a subject (and for a Protobuf subject one of its messages; "" for its first). */
export function pickSubject(channel: string, subject: string, message = "") {
  try {
    for (const [key, value] of [
      [KEY(channel), subject],
      [MESSAGE_KEY(channel), subject ? message : ""],
    ] as const) {
      if (value) window.localStorage.setItem(key, value);
      else window.localStorage.removeItem(key);
    }
  } catch {
    /* private mode: the pick lasts for this page only */
  }
  listeners.forEach((notify) => notify());
}

/** The pick as one string (a stable snapshot): subject, then the message after a newline. */
function useSubjectPick(channel: string): [string, string] {
  const both = useSyncExternalStore(
    (notify) => {
      listeners.add(notify);
      return () => listeners.delete(notify);
    },
    () => `${pickedSubject(channel)}\n${stored(MESSAGE_KEY(channel))}`,
  );
  const [subject = "", message = ""] = both.split("\n");
  return [subject, message];
}

export interface Shape {
  /** Where the shape comes from, for the user ("discovered", or the subject's name). */
  origin: string | null;
  schema: JsonSchema | null;
  fields: FieldPath[];
  /** The picked registry subject, "" when the discovered schema is used. */
  subject: string;
  /** A Protobuf subject's messages, and the one the shape is of. */
  messages: string[];
  message: string;
}

/** The shape of the builder's channel: the picked subject's, else the discovered one. */
export function useShape(): Shape {
  const name = useBuilder((s) => s.name);
  const exists = useBuilder((s) => s.exists);
  const team = useBuilder((s) => s.team);
  const [subject, message] = useSubjectPick(name);
  const discovery = useDiscovery(name, exists);
  const picked = useSubjectShape(subject, message, team || null); // the channel's team's subject
  return useMemo(() => {
    if (subject && picked.data) {
      const schema = asEventSchema(picked.data.schema);
      const { messages, message: of } = picked.data;
      return {
        origin: of ? `${subject} (${of})` : subject,
        schema,
        fields: fieldPaths(schema),
        subject,
        messages,
        message: of,
      };
    }
    const none = { subject, messages: [], message: "" };
    const schema = discovery.data?.schema ?? null;
    if (!schema) return { origin: null, schema: null, fields: [], ...none };
    return { origin: "discovered", schema, fields: fieldPaths(schema), ...none };
  }, [subject, picked.data, discovery.data]);
}
