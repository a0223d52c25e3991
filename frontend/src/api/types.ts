/**
 * Shapes of the /api/v1/ answers the console reads (see /api/docs/).
 *
 * Most are aliases onto ./schema.d.ts, which openapi-typescript generates from the OpenAPI
 * schema drf-spectacular derives from the API (`make api-types` regenerates it; `make test`
 * fails when it drifts). Hand-written here is only what that schema cannot say, each with why.
 */

import type { components, paths } from "./schema";

type Schemas = components["schemas"];

/** Some of `T`'s optional keys made required. */
type WithRequired<T, K extends keyof T> = Omit<T, K> & Required<Pick<T, K>>;

// -- the channel spec -----------------------------------------------------------------------------
// Hand-written: the API schema declares `spec` a free-form object. Its real shape is the pydantic
// model pipelines.spec.ChannelSpec (each stage's `config` the plugin's own JSON Schema, served by
// GET /plugins/), which the server validates; the OpenAPI schema does not carry it.

export type JsonSchema = { [key: string]: unknown };
export type PluginKind = Schemas["PluginKindEnum"];

export interface Stage {
  type: string;
  config: Record<string, unknown>;
}

export interface ErrorPolicy {
  tolerance: "none" | "all";
  dead_letter: Stage | null;
  log: boolean;
}

export type Isolation = Schemas["IsolationEnum"];
export type ExecutionMode = "micro-batch" | "real-time" | "available-now";

/** How the runtime runs a channel (the spec's `runtime` block; absent: the defaults). */
export interface RuntimeOptions {
  isolation: Isolation;
  mode: ExecutionMode;
  /** micro-batch: at most one batch this often; real-time: checkpoint interval; null: none. */
  interval_seconds: number | null;
}

/**
 * One rule of a bus: the events its pattern matches (every event without one), reshaped by its
 * transforms, go to each of its sinks. The server dumps every field; a request may leave out
 * all but `name` and `sinks`.
 */
export interface Rule {
  name: string;
  description?: string;
  /** A disabled rule matches nothing (default true). */
  enabled?: boolean;
  /** An event pattern over the event after the shared transforms; null: every event. */
  pattern?: Record<string, unknown> | null;
  transforms?: Stage[];
  sinks: Stage[];
}

/** A linear channel has `sink`; a bus has `rules` instead (exactly one of the two). */
export interface ChannelSpec {
  source: Stage;
  transforms: Stage[];
  sink?: Stage;
  rules?: Rule[];
  errors?: ErrorPolicy;
  runtime?: RuntimeOptions;
}

/** A generated shape whose free-form `spec` is the channel spec. */
type WithSpec<T extends { spec: unknown }> = Omit<T, "spec"> & { spec: ChannelSpec };

// -- aliases onto the generated types -------------------------------------------------------------

export type Plugin = Schemas["Plugin"];
export type ConnectorState = Schemas["ConnectorStateEnum"];
/** The state as shown: the last observed one, or NOT_REPORTING once its reports stopped. */
export type ShownState = Schemas["ShownStateEnum"];
export type TargetState = Schemas["TargetStateEnum"];
/** A channel's health level (`status.health.level`, the list's `health` filter). */
export type HealthLevel = Schemas["LevelEnum"];

/**
 * Every field is in every answer, but the schema marks the writable ones that may be left out
 * of a request optional in the answer too (drf-spectacular leaves a field with `required=False`
 * or a model default out of a response's `required`: tfranzel/drf-spectacular#1299).
 */
export type Channel = WithRequired<
  WithSpec<Schemas["Channel"]>,
  "description" | "target_state" | "restart_policy" | "ingest_rate_limit"
>;
/** The body of POST /channels/ and PUT /channels/{name}/. */
export type ChannelRequest = WithSpec<Schemas["ChannelRequest"]>;
/** The answer to POST …/ingest-token: the only time the token is shown. */
export type IssuedIngestToken = Schemas["IssuedIngestToken"];
/** Every field is in every answer; the schema marks all but `id` optional (as for Channel). */
export type Task = Required<Schemas["Task"]>;
/** `rules`: a bus's per-rule counts (empty for a linear channel). */
export type ChannelStatus = Omit<Schemas["ChannelStatus"], "tasks"> & { readonly tasks: Task[] };
/** What deploying the saved revision does (GET: would do; POST: did). */
export type DeployPlan = Schemas["DeployPlan"];
/**
 * A bus's counts for one rule since the channel was first started, in the spec's rule order (the runtime's
 * ConnectorStatus.rules); each target's `sink` is its spec path, e.g. "rules[0].sinks[1]".
 */
export type RuleCounts = Schemas["RuleCounts"];
/** POST /event-patterns/test-rules: which of the rules a sample event matches. */
export type RuleTestRequest = Schemas["RulesTestRequest"];
export type RuleTestAnswer = Schemas["RulesTestResult"];
export type StageCounts = Schemas["StageCounts"];
export type LifecycleEvent = Schemas["LifecycleEvent"];
export type Worker = Schemas["Worker"];
export type WorkerCapacity = Schemas["WorkerCapacity"];
/** One saved version of a channel's spec (GET /channels/{name}/revisions/). */
export type Revision = WithSpec<Schemas["Revision"]>;
/** One source partition and the NEXT offset the channel reads from it. */
export type SourceOffset = Schemas["SourceOffset"];
export type ChannelOffsets = Schemas["ChannelOffsets"];
/** PATCH /channels/{name}/offsets with explicit offsets (partitions left out keep theirs). */
export type OffsetsBody = Required<Pick<Schemas["PatchedOffsetsAlterRequest"], "offsets">>;
/** A long-lived Spark driver of a runtime worker and the channels whose queries it runs. */
export type ClusterDriver = Schemas["ClusterDriver"];
export type ClusterRuntimeWorker = Schemas["ClusterRuntimeWorker"];
export type SparkWorker = Schemas["SparkWorker"];
export type SparkApplication = Schemas["SparkApplication"];
export type Executor = Schemas["Executor"];
export type ClusterChannel = Schemas["ClusterChannel"];
export type Cluster = Schemas["Cluster"];
/** GET /api/v1/me/: who is signed in and what they may do. */
export type Me = Schemas["Me"];
/** A team the caller sees, with each quota against the team's use (GET /api/v1/teams/). */
export type Team = Schemas["Team"];
export type TeamQuotas = Schemas["TeamQuotas"];
/** The live tail of a channel's output (GET /channels/{name}/preview). */
export type ChannelPreview = Schemas["ChannelPreview"];
/** One look at a channel's events where they are (GET /channels/{name}/tail). */
export type ChannelTail = Schemas["ChannelTail"];
export type TailPoint = Schemas["TailPoint"];
export type TailRecord = Schemas["TailRecord"];
/** The answer to POST plugins/{kind}/{type}/validate (200 valid; 400 not, or 200 with ?invalid_status=200). */
export type StageValidation = Schemas["PluginConfigValid"] | Schemas["PluginConfigInvalid"];
export type EventPatternResult = Schemas["EventPatternResult"];
/** Kafka Connect's answer to an offsets change. */
export type OffsetsMessage = Schemas["OffsetsMessage"];

// -- hand-written: what the schema cannot say -----------------------------------------------------

/**
 * A channel as `GET /channels/?expand=status` gives it: the schema has one item shape for both
 * forms of the list, with `status` optional because it depends on the query.
 */
export type ChannelWithStatus = Channel & { status: ChannelStatus };

/**
 * A page of a limit/offset list (DRF's LimitOffsetPagination). The schema spells one
 * `Paginated<Item>List` per endpoint, with `next` and `previous` optional though DRF always
 * sends them; this is their common shape.
 */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

/** The lifecycle operations, each a `POST /channels/{name}/<action>`: URL suffixes, not a schema. */
export type ChannelAction = "start" | "stop" | "pause" | "resume" | "restart";
/** Each action's operation in the schema: a compile error here means one is no longer in the API. */
export type ChannelActionOperations = {
  [A in ChannelAction]: paths[`/api/v1/channels/{name}/${A}`]["post"];
};

/**
 * Field errors keyed by path, e.g. {"spec.transforms[1].config.pattern": ["…"]}: DRF's
 * validation answer, whose keys are the request's own field paths, which no schema lists.
 */
export type FieldErrors = Record<string, string[]>;
export type ChannelRun = Schemas["ChannelRun"];
