/** Shapes of the /api/v1/ answers the console reads (see /api/docs/). */

export type JsonSchema = { [key: string]: unknown };
export type PluginKind = "source" | "transform" | "sink";

export interface Plugin {
  type: string;
  kind: PluginKind;
  title: string;
  description: string;
  config_schema: JsonSchema;
}

export interface Stage {
  type: string;
  config: Record<string, unknown>;
}

export interface ErrorPolicy {
  tolerance: "none" | "all";
  dead_letter: Stage | null;
  log: boolean;
}

export type Isolation = "shared" | "dedicated";
export type ExecutionMode = "micro-batch" | "real-time" | "available-now";

/** How the runtime runs a channel (the spec's `runtime` block; absent: the defaults). */
export interface RuntimeOptions {
  isolation: Isolation;
  mode: ExecutionMode;
  /** micro-batch: at most one batch this often; real-time: checkpoint interval; null: none. */
  interval_seconds: number | null;
}

export interface ChannelSpec {
  source: Stage;
  transforms: Stage[];
  sink: Stage;
  errors?: ErrorPolicy;
  runtime?: RuntimeOptions;
}

export type ConnectorState =
  | "UNASSIGNED"
  | "RUNNING"
  | "PAUSED"
  | "STOPPED"
  | "FAILED"
  | "RESTARTING";
export type TargetState = "RUNNING" | "PAUSED" | "STOPPED";

export interface Channel {
  name: string;
  description: string;
  spec: ChannelSpec;
  target_state: TargetState;
  state: ConnectorState;
  revision: number | null;
  deployed_revision: number | null;
  drift: boolean;
  created: string;
  updated: string;
  created_by: string | null;
  /** Whether POST …/events has a token (never the token itself). */
  ingest_token?: { exists: boolean; prefix: string | null };
  /** Events/s HTTP ingestion accepts; null: the site default. */
  ingest_rate_limit?: number | null;
}

/** The answer to POST …/ingest-token: the only time the token is shown. */
export interface IssuedIngestToken {
  token: string;
  prefix: string;
  created: boolean;
}

export interface Task {
  id: number;
  state: ConnectorState;
  worker_id: string | null;
  topic: string | null;
  partition: number | null;
  offset: number | null;
  end_offset: number | null;
  lag: number | null;
  rows_per_second: number | null;
  updated: string;
}

export interface ChannelStatus {
  name: string;
  state: ConnectorState;
  target_state: TargetState;
  worker_id: string | null;
  /** The Spark driver running the channel's query (shared or dedicated); null when none. */
  driver_id: string | null;
  /** Why the channel is in its state when the state alone does not say; "" otherwise. */
  reason: string;
  trace: string | null;
  revision: number | null;
  latest_revision: number | null;
  drift: boolean;
  generation: number | null;
  restart_attempts: number | null;
  state_changed_at: string | null;
  last_status_at: string | null;
  dead_letters: number | null;
  tasks: Task[];
  /** Per-stage event counts since the driver started (empty before the first batch). */
  stages?: StageCounts[];
}

export interface StageCounts {
  stage: "source" | "transform" | "sink";
  /** The transform's place in the channel; null for the source and the sink. */
  index: number | null;
  type: string;
  in: number;
  out: number;
  failed: number;
  in_per_second?: number;
  out_per_second?: number;
}

export interface LifecycleEvent {
  id: number;
  created_at: string;
  subject_type: string;
  subject_id: string;
  from_state: string;
  to_state: string;
  actor: string;
  reason: string;
}

export interface Worker {
  worker_id: string;
  host: string;
  pid: number | null;
  state: string;
  started_at: string | null;
  last_heartbeat: string | null;
  connectors: string[];
}

/** A channel as ``GET /channels/?expand=status`` gives it. */
export interface ChannelWithStatus extends Channel {
  status: ChannelStatus;
}

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export type ChannelAction = "start" | "stop" | "pause" | "resume" | "restart";

/** Field errors keyed by path, e.g. {"spec.transforms[1].config.pattern": ["…"]}. */
export type FieldErrors = Record<string, string[]>;

/** One saved version of a channel's spec (GET /channels/{name}/revisions/). */
export interface Revision {
  number: number;
  created_at: string;
  created_by: string | null;
  spec: ChannelSpec;
}

/** One source partition and the NEXT offset the channel reads from it. */
export interface SourceOffset {
  partition: { topic: string; partition: number };
  offset: { offset: number };
}

export interface ChannelOffsets {
  offsets: SourceOffset[];
  note: string;
}

/** A long-lived Spark driver of a runtime worker and the channels whose queries it runs. */
export interface ClusterDriver {
  driver_id: string;
  isolation: Isolation;
  pid: number;
  started_at: string | null;
  last_heartbeat: string | null;
  heartbeat_age: number;
  /** The most channels it takes. */
  capacity: number;
  /** Its JVM memory (e.g. "1g"). */
  memory: string;
  /** Cores its real-time queries hold. */
  cores: number;
  application_id: string | null;
  connectors: string[];
  channels: string[];
}

export interface ClusterRuntimeWorker {
  worker_id: string;
  host: string;
  pid: number;
  state: string;
  started_at: string | null;
  last_heartbeat: string | null;
  heartbeat_age: number;
  connectors: string[];
  drivers: ClusterDriver[];
}

export interface SparkWorker {
  worker_id: string;
  host: string;
  port: number | null;
  state: string;
  cores: number;
  cores_used: number;
  memory_mb: number;
  memory_used_mb: number;
  last_heartbeat: string | null;
  heartbeat_age: number | null;
  web_ui: string;
}

export interface SparkApplication {
  app_id: string;
  name: string;
  state: string;
  cores: number;
  memory_per_executor_mb: number;
  started_at: string | null;
}

export interface Executor {
  id: string;
  host: string;
  port: number | null;
  cores: number;
  active_tasks: number;
  completed_tasks: number;
  failed_tasks: number;
  memory_used: number;
  memory_total: number;
}

export interface ClusterChannel {
  name: string;
  connector_id: string;
  state: ConnectorState;
  worker_id: string | null;
  driver_id: string | null;
  application_id: string | null;
  executors: Executor[];
}

export interface Cluster {
  runtime_workers: ClusterRuntimeWorker[];
  spark: {
    mode: "local" | "standalone" | "other";
    master: string;
    status: string | null;
    web_ui: string | null;
    error: string | null;
    workers: SparkWorker[];
    applications: SparkApplication[];
  };
  channels: ClusterChannel[];
}

/** GET /api/v1/me/: who is signed in and what they may do. */
export interface Me {
  username: string;
  roles: string[];
  is_superuser: boolean;
  can: { view: boolean; operate: boolean; edit: boolean };
}

/** PATCH /channels/{name}/offsets with explicit offsets (partitions left out keep theirs). */
export interface OffsetsBody {
  offsets: SourceOffset[];
}
