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
import { asEventSchema, fieldPaths, type FieldPath, type JsonSchema } from "./shape";
import { useBuilder } from "./store";

/** GET /api/v1/channels/{name}/discovery (its `schema`: a JSON Schema object, or null). */
export type ChannelDiscovery = Omit<components["schemas"]["ChannelDiscovery"], "schema"> & {
  schema: JsonSchema | null;
};

/** GET /api/v1/schemas/{name}/shape (its `schema`: a JSON Schema object). */
export type SubjectShape = Omit<components["schemas"]["SubjectShape"], "schema"> & { schema: JsonSchema };

export function useDiscovery(name: string, enabled: boolean, poll = false) {
  return useQuery({
    queryKey: ["discovery", name],
    queryFn: () => api<ChannelDiscovery>(`channels/${encodeURIComponent(name)}/discovery`),
    enabled: enabled && name !== "",
    refetchInterval: poll ? 5000 : false,
  });
}

const KEY = (channel: string) => `sluice.shape-subject.${channel || "(new)"}`;
const listeners = new Set<() => void>();

/** The registry subject picked as the shape of a channel's source ("" for none). */
export function pickedSubject(channel: string): string {
  try {
    return window.localStorage.getItem(KEY(channel)) ?? "";
  } catch {
    return "";
  }
}

export function pickSubject(channel: string, subject: string) {
  try {
    if (subject) window.localStorage.setItem(KEY(channel), subject);
    else window.localStorage.removeItem(KEY(channel));
  } catch {
    /* private mode: the pick lasts for this page only */
  }
  listeners.forEach((notify) => notify());
}

function useSubjectPick(channel: string): string {
  return useSyncExternalStore(
    (notify) => {
      listeners.add(notify);
      return () => listeners.delete(notify);
    },
    () => pickedSubject(channel),
  );
}

function latestShape(subject: string) {
  return api<SubjectShape>(`schemas/${encodeURIComponent(subject)}/shape`);
}

export interface Shape {
  /** Where the shape comes from, for the user ("discovered", or the subject's name). */
  origin: string | null;
  schema: JsonSchema | null;
  fields: FieldPath[];
  /** The picked registry subject, "" when the discovered schema is used. */
  subject: string;
}

/** The shape of the builder's channel: the picked subject's, else the discovered one. */
export function useShape(): Shape {
  const name = useBuilder((s) => s.name);
  const exists = useBuilder((s) => s.exists);
  const subject = useSubjectPick(name);
  const discovery = useDiscovery(name, exists);
  const picked = useQuery({
    queryKey: ["shape-subject", subject],
    queryFn: () => latestShape(subject),
    enabled: subject !== "",
    staleTime: 60_000,
  });
  return useMemo(() => {
    if (subject && picked.data) {
      const schema = asEventSchema(picked.data.schema);
      return { origin: subject, schema, fields: fieldPaths(schema), subject };
    }
    const schema = discovery.data?.schema ?? null;
    if (!schema) return { origin: null, schema: null, fields: [], subject };
    return { origin: "discovered", schema, fields: fieldPaths(schema), subject };
  }, [subject, picked.data, discovery.data]);
}
