/** The audit page's query (pure, unit-tested): filters and paging as GET /api/v1/audit/'s
 * parameters (?actor=&action=&object_type=&object_id=&limit=&offset=). */

import { keepPreviousData, useQuery } from "@tanstack/react-query";

import { api } from "../api/client";
import type { Page } from "../api/types";
import type { components } from "../api/schema";

export type AuditEvent = components["schemas"]["AuditEvent"];

export interface AuditFilters {
  /** A channel name: its events only (object_type=channel&object_id=…). */
  channel: string;
  /** A username (the API's actor), or "anonymous". */
  user: string;
  /** An action ("channel.start"), or a family ending in "." ("channel.offsets."). */
  action: string;
  limit: number;
  offset: number;
}

export const DEFAULT_AUDIT: AuditFilters = { channel: "", user: "", action: "", limit: 50, offset: 0 };

/** The actions the console offers to filter by (the API takes any, and prefixes). */
export const ACTIONS = [
  "channel.",
  "channel.create",
  "channel.update",
  "channel.delete",
  "channel.start",
  "channel.stop",
  "channel.pause",
  "channel.resume",
  "channel.restart",
  "channel.bulk",
  "channel.offsets.",
  "channel.replay.",
  "channel.dead_letters.redrive",
  "channel.ingest_token.",
  "worker.",
  "auth.",
  "auth.login_failed",
];

/** The list's path under /api/v1/, empty filters left out. */
export function auditPath(filters: AuditFilters): string {
  const params = new URLSearchParams();
  const channel = filters.channel.trim();
  if (channel) {
    params.set("object_type", "channel");
    params.set("object_id", channel);
  }
  if (filters.user.trim()) params.set("actor", filters.user.trim());
  if (filters.action.trim()) params.set("action", filters.action.trim());
  params.set("limit", String(filters.limit));
  params.set("offset", String(filters.offset));
  return `audit/?${params.toString()}`;
}

/** "Success", "Refused (403)", "Failed (500)" for an HTTP status; "—" when none was recorded. */
export function outcomeText(status: number | null | undefined): { text: string; tone: "ok" | "warn" | "bad" | "" } {
  if (status === null || status === undefined) return { text: "—", tone: "" };
  if (status < 400) return { text: `OK (${status})`, tone: "ok" };
  if (status < 500) return { text: `Refused (${status})`, tone: "warn" };
  return { text: `Failed (${status})`, tone: "bad" };
}

export function useAudit(filters: AuditFilters) {
  return useQuery({
    queryKey: ["audit", auditPath(filters)],
    queryFn: () => api<Page<AuditEvent>>(auditPath(filters)),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
}
