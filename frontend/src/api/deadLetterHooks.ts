/** The dead-letter endpoints' query hooks (GET list, GET one, POST redrive). */

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { deadLettersPath, type DeadLetterFilters, type RedriveBody } from "../ops/deadLetters";
import { api, post } from "./client";
import type { components } from "./schema";

type Schemas = components["schemas"];
export type DeadLetterPage = Schemas["DeadLetterPage"];
export type DeadLetterSummary = Schemas["DeadLetterSummary"];
export type DeadLetter = Schemas["DeadLetter"];
export type RedriveResult = Schemas["RedriveResult"];

export function useDeadLetters(name: string, filters: DeadLetterFilters, page: number) {
  return useQuery({
    queryKey: ["dead-letters", name, filters, page],
    queryFn: () => api<DeadLetterPage>(deadLettersPath(name, filters, page)),
    refetchInterval: 10_000,
  });
}

export function useDeadLetter(name: string, id: string | null) {
  return useQuery({
    queryKey: ["dead-letter", name, id],
    queryFn: () =>
      api<DeadLetter>(`channels/${encodeURIComponent(name)}/dead-letters/${encodeURIComponent(id ?? "")}/`),
    enabled: Boolean(id),
  });
}

export function useRedrive(name: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (body: RedriveBody) =>
      post<RedriveResult>(`channels/${encodeURIComponent(name)}/dead-letters/redrive`, body),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: ["dead-letters", name] });
      void client.invalidateQueries({ queryKey: ["dead-letter", name] }); // its "Redriven" line
      void client.invalidateQueries({ queryKey: ["lifecycle", name] });
    },
  });
}
