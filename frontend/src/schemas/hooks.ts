/** Query hooks of the schema registry's pages (GET /api/v1/schemas/…). */

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, post } from "../api/client";
import { listItems } from "../api/pagination";
import type { components } from "../api/schema";
import type { Registered, Registration, RegistrationCheck } from "./register";

export type SchemaSubject = components["schemas"]["Subject"];
export type SchemaVersion = components["schemas"]["Version"];
export type SchemaDiff = components["schemas"]["Diff"];
/** GET schemas/{name}/shape: the JSON Schema of the payload a subject describes. */
export type SubjectShape = Omit<components["schemas"]["SubjectShape"], "schema"> & {
  schema: Record<string, unknown>;
};

const subjectPath = (name: string) => `schemas/${encodeURIComponent(name)}`;
/** `?team=` (or `&team=`) naming the subject's team; nothing when it is not known. */
const teamQuery = (team: string | null | undefined, first = true) =>
  team ? `${first ? "?" : "&"}team=${encodeURIComponent(team)}` : "";

export function useSchemaSubjects() {
  return useQuery({ queryKey: ["schema-subjects"], queryFn: () => listItems<SchemaSubject>("schemas/") });
}

export function useSchemaVersions(name: string | null, team?: string | null) {
  return useQuery({
    queryKey: ["schema-versions", name, team ?? null],
    queryFn: () => api<SchemaVersion[]>(`${subjectPath(name ?? "")}/versions${teamQuery(team)}`),
    enabled: Boolean(name),
  });
}

export function useSchemaDiff(name: string | null, from: number | null, to: number | null, team?: string | null) {
  return useQuery({
    queryKey: ["schema-diff", name, from, to, team ?? null],
    queryFn: () =>
      api<SchemaDiff>(`${subjectPath(name ?? "")}/diff?from=${from ?? ""}&to=${to ?? ""}${teamQuery(team, false)}`),
    enabled: Boolean(name) && from !== null && to !== null,
  });
}

/** The shape of a subject's latest version (`message`: a Protobuf message, "" its first), in
 * `team`'s registry (a channel's team; null: the one team of yours that has the subject). */
export function useSubjectShape(name: string, message: string, team?: string | null) {
  const query = (message ? `?message=${encodeURIComponent(message)}` : "") + teamQuery(team, !message);
  return useQuery({
    queryKey: ["schema-shape", name, message, team ?? null],
    queryFn: () => api<SubjectShape>(`${subjectPath(name)}/shape${query}`),
    enabled: name !== "",
    staleTime: 60_000,
  });
}

/** What registering would do (POST schemas/check): changes nothing. */
export function useCheckRegistration() {
  return useMutation({ mutationFn: (body: Registration) => post<RegistrationCheck>("schemas/check", body) });
}

/** Register a schema (POST schemas/); the subject's lists and diffs are read again. */
export function useRegisterSchema() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: Registration) => post<Registered>("schemas/", body),
    onSuccess: (answer) => {
      void client.invalidateQueries({ queryKey: ["schema-subjects"] });
      void client.invalidateQueries({ queryKey: ["schema-versions", answer.version.subject] });
      void client.invalidateQueries({ queryKey: ["schema-diff", answer.version.subject] });
    },
  });
}
