/** One TanStack Query hook per endpoint. Status hooks poll every 2 s. */

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";

import { api, ApiError, post } from "./client";
import { listItems, RECENT_LIMIT } from "./pagination";
import { workersPath } from "./workerHooks";
import type {
  Channel,
  ChannelAction,
  ChannelOffsets,
  ChannelPreview,
  ChannelRequest,
  ChannelSpec,
  ChannelStatus,
  ChannelTail,
  Cluster,
  DeployPlan,
  EventPatternResult,
  IssuedIngestToken,
  LifecycleEvent,
  Me,
  OffsetsBody,
  OffsetsMessage,
  Page,
  Plugin,
  Revision,
  RuleTestAnswer,
  RuleTestRequest,
  StageValidation,
  Team,
  Worker,
} from "./types";

export const POLL_MS = 2000;

export function usePlugins() {
  return useQuery({
    queryKey: ["plugins"],
    queryFn: () => listItems<Plugin>("plugins/"),
    staleTime: Infinity,
  });
}

/** Whether an error is the API's 404 (the thing asked for does not exist). */
export function isNotFound(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404;
}

/** Retry once, except a 404: asking again does not make the thing exist. */
function retryUnlessNotFound(failures: number, error: unknown): boolean {
  return !isNotFound(error) && failures < 1;
}

/** Whether a channel of that name exists: one request for it (a 404 says no), never the
 *  whole list (a fleet may hold thousands). */
export async function channelExists(name: string): Promise<boolean> {
  try {
    await api<Channel>(`channels/${encodeURIComponent(name)}/`);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

export function useChannel(name: string | null) {
  return useQuery({
    queryKey: ["channel", name],
    queryFn: () => api<Channel>(`channels/${encodeURIComponent(name ?? "")}/`),
    enabled: Boolean(name),
    retry: retryUnlessNotFound,
  });
}

/** The channel's status, polled every 2 s while it exists (a 404 stops the polling). */
export function useChannelStatus(name: string, enabled = true) {
  return useQuery({
    queryKey: ["status", name],
    queryFn: () => api<ChannelStatus>(`channels/${encodeURIComponent(name)}/status`),
    refetchInterval: (query) => (isNotFound(query.state.error) ? false : POLL_MS),
    retry: retryUnlessNotFound,
    enabled,
  });
}

export function useLifecycle(name: string) {
  return useQuery({
    queryKey: ["lifecycle", name],
    queryFn: () => listItems<LifecycleEvent>(`channels/${encodeURIComponent(name)}/lifecycle/`, RECENT_LIMIT),
    refetchInterval: POLL_MS,
  });
}

/** The preview tail; ``poll`` false reads it once (and again when asked: refetch). */
export function usePreview(name: string, enabled: boolean, poll = true) {
  return useQuery({
    queryKey: ["preview", name],
    queryFn: () =>
      api<ChannelPreview>(`channels/${encodeURIComponent(name)}/preview?limit=20`).then((answer) => answer.events),
    refetchInterval: poll ? POLL_MS : false,
    enabled,
  });
}

/** The live tail at point ``at`` (the channel's default point when undefined), the newest
 * ``limit`` records; polled every 2 s while ``poll`` (not while paused, nor while the browser
 * tab is hidden: TanStack Query polls in the foreground only). */
export function useTail(name: string, at: string | undefined, poll: boolean, limit = 50) {
  const query = new URLSearchParams({ limit: String(limit), ...(at ? { at } : {}) });
  return useQuery({
    queryKey: ["tail", name, at ?? "", limit],
    queryFn: () => api<ChannelTail>(`channels/${encodeURIComponent(name)}/tail?${query}`),
    refetchInterval: poll ? POLL_MS : false,
    // Paused means no reading at all, also when the window gets the focus back.
    refetchOnWindowFocus: poll,
  });
}

/** The runtime workers, all or only those in one service state (`?service=`). */
export function useWorkers(service = "") {
  return useQuery({
    queryKey: ["workers", service],
    queryFn: () => listItems<Worker>(workersPath(service)),
    refetchInterval: POLL_MS,
  });
}

export function useChannelAction() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ name, action }: { name: string; action: ChannelAction }) =>
      post<unknown>(
        `channels/${encodeURIComponent(name)}/${action}${action === "restart" ? "?include_tasks=true" : ""}`,
      ),
    onSettled: (_data, _error, { name }) => {
      void client.invalidateQueries({ queryKey: ["status", name] });
      void client.invalidateQueries({ queryKey: ["channels"] });
      void client.invalidateQueries({ queryKey: ["lifecycle", name] });
      void client.invalidateQueries({ queryKey: ["teams"] });
    },
  });
}

/** What deploying the channel's saved revision would do: asked only while it is wanted. */
export function useDeployPlan(name: string, enabled: boolean, version: string) {
  return useQuery({
    // Asked again when what it depends on changes (the revisions, the state, the target).
    queryKey: ["deploy", name, version],
    queryFn: () => api<DeployPlan>(`channels/${encodeURIComponent(name)}/deploy`),
    enabled,
  });
}

/** Deploy the saved revision (its answer: the plan followed). */
export function useDeploy() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => post<DeployPlan>(`channels/${encodeURIComponent(name)}/deploy`),
    onSettled: (_data, _error, name) => {
      for (const key of ["status", "deploy", "lifecycle", "channel"]) {
        void client.invalidateQueries({ queryKey: [key, name] });
      }
      void client.invalidateQueries({ queryKey: ["channels"] });
    },
  });
}

export interface SaveChannel {
  name: string;
  description: string;
  spec: ChannelSpec;
  exists: boolean;
  /** A new channel's team (empty: the server takes the user's one team); ignored on update. */
  team?: string;
}

export function useSaveChannel() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: ({ name, description, spec, exists, team }: SaveChannel) => {
      const body: ChannelRequest = { name, description, spec };
      if (!exists && team) body.team = team;
      return exists
        ? api<Channel>(`channels/${encodeURIComponent(name)}/`, {
            method: "PUT",
            body: JSON.stringify(body),
          })
        : post<Channel>("channels/", body);
    },
    onSuccess: (channel) => {
      client.setQueryData(["channel", channel.name], channel);
      void client.invalidateQueries({ queryKey: ["channels"] });
      void client.invalidateQueries({ queryKey: ["revisions", channel.name] });
      void client.invalidateQueries({ queryKey: ["status", channel.name] });
      void client.invalidateQueries({ queryKey: ["teams"] });
      void client.invalidateQueries({ queryKey: ["deploy", channel.name] });
    },
  });
}

/** The server's verdict on a stage config. A config not valid yet is an answer, not an error:
 * it is asked for with `invalid_status=200`, so checking as the user types logs no failed
 * request in the browser's console (a 400 from an older server is read the same way). With a
 * `team`, within that team's reach (the topics, files and hosts its channels may touch). */
export function validateStage(kind: string, type: string, config: unknown, team?: string): Promise<StageValidation> {
  const within = team ? `&team=${encodeURIComponent(team)}` : "";
  return post<StageValidation>(
    `plugins/${encodeURIComponent(kind)}/${encodeURIComponent(type)}/validate?invalid_status=200${within}`,
    { config },
  ).catch((error: unknown) => {
    const body = (error as { body?: unknown }).body;
    if (body && typeof body === "object" && "valid" in body) return body as StageValidation;
    throw error;
  });
}

export function testPattern(pattern: unknown, event: unknown): Promise<EventPatternResult> {
  return post<EventPatternResult>("event-patterns/test", { pattern, event });
}

/** Which of a bus's rules a sample event matches (POST event-patterns/test-rules). */
export function useTestRules() {
  return useMutation({
    mutationFn: (body: RuleTestRequest) => post<RuleTestAnswer>("event-patterns/test-rules", body),
  });
}

export function useRevisions(name: string) {
  return useQuery({
    queryKey: ["revisions", name],
    queryFn: () => listItems<Revision>(`channels/${encodeURIComponent(name)}/revisions/`, RECENT_LIMIT),
  });
}

export function useOffsets(name: string) {
  return useQuery({
    queryKey: ["offsets", name],
    queryFn: () => api<ChannelOffsets>(`channels/${encodeURIComponent(name)}/offsets`),
    refetchInterval: POLL_MS * 5,
  });
}

/** PATCH (explicit offsets) or DELETE (reset) a stopped channel's offsets. */
export function useChangeOffsets(name: string) {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (change: { reset: true } | { body: OffsetsBody }) =>
      "reset" in change
        ? api<OffsetsMessage>(`channels/${encodeURIComponent(name)}/offsets`, { method: "DELETE" })
        : api<OffsetsMessage>(`channels/${encodeURIComponent(name)}/offsets`, {
            method: "PATCH",
            body: JSON.stringify(change.body),
          }),
    onSettled: () => {
      void client.invalidateQueries({ queryKey: ["offsets", name] });
      void client.invalidateQueries({ queryKey: ["lifecycle", name] });
    },
  });
}

export function useCluster() {
  return useQuery({
    queryKey: ["cluster"],
    queryFn: () => api<Cluster>("cluster/"),
    refetchInterval: POLL_MS * 2,
  });
}

/** Everything allowed: what the console assumes when the server has no /me endpoint. */
export const EVERYONE: Me = {
  username: "",
  roles: [],
  teams: [],
  is_superuser: false,
  can: { view: true, operate: true, operate_workers: true, edit: true },
};

export function useMe() {
  return useQuery({
    queryKey: ["me"],
    queryFn: () =>
      api<Me>("me/").catch((error: unknown) => {
        if (error instanceof ApiError && error.status === 404) return EVERYONE;
        throw error;
      }),
    staleTime: 60_000,
    retry: false,
  });
}

/** The teams the caller sees with their quotas and use (one page: a user is in few teams). */
export function useTeams() {
  return useQuery({
    queryKey: ["teams"],
    queryFn: () => api<Page<Team>>("teams/?limit=100"),
    staleTime: 15_000,
  });
}

export function useDeleteChannel() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: (name: string) => api<null>(`channels/${encodeURIComponent(name)}/`, { method: "DELETE" }),
    onSuccess: (_data, name) => {
      client.removeQueries({ queryKey: ["channel", name] });
      void client.invalidateQueries({ queryKey: ["channels"] });
    },
  });
}

/** Issue or rotate (POST) and revoke (DELETE) a channel's ingestion token; save its rate limit. */
export function useIngestAdmin(name: string) {
  const client = useQueryClient();
  const path = `channels/${encodeURIComponent(name)}`;
  const settled = () => {
    void client.invalidateQueries({ queryKey: ["channel", name] });
    void client.invalidateQueries({ queryKey: ["lifecycle", name] });
  };
  return {
    issue: useMutation({
      mutationFn: () => post<IssuedIngestToken>(`${path}/ingest-token`),
      onSettled: settled,
    }),
    revoke: useMutation({
      mutationFn: () => api<null>(`${path}/ingest-token`, { method: "DELETE" }),
      onSettled: settled,
    }),
    rateLimit: useMutation({
      mutationFn: (limit: number | null) =>
        api<unknown>(`${path}/`, { method: "PATCH", body: JSON.stringify({ ingest_rate_limit: limit }) }),
      onSettled: settled,
    }),
  };
}
