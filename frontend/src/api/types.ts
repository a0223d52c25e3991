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

export interface ChannelSpec {
  source: Stage;
  transforms: Stage[];
  sink: Stage;
  errors?: ErrorPolicy;
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
