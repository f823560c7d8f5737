/**
 * Calls through the API: create (then handed to the engine), get, list.
 *
 * Rules of CreateCall (violations are INVALID_ARGUMENT naming the proto
 * field path; protovalidate has already applied the proto's own rules):
 * - `call.to`: a valid +E.164 number (libphonenumber-js/max `isValid`, and
 *   written in its canonical E.164 form): transport PSTN; or a SIP URI
 *   `sip:user@host[:port]` (`sips:` too; no `?` headers): transport SIP,
 *   placed over the SIP edge when it runs (src/telephony/carrier-router.ts).
 * - `call.from`: a valid +E.164 number that belongs to an ACTIVE phone
 *   number instance of the project, a number inside a provisioned range
 *   included (`findByNumber`). A number of another project, a suspended,
 *   pending or deleted instance, or no instance at all: `call.from` names it.
 *   A number without the VOICE capability (SMS only) is FAILED_PRECONDITION
 *   `NUMBER_NOT_VOICE_CAPABLE` (metadata `field` `call.from`).
 * - `call.options`: required; `handler_uris` 1 to 5 absolute http(s) URIs
 *   (tel: and sip: handlers are not supported yet), each violation naming
 *   `call.options.handler_uris[i]`; `state_update_uri` empty or an absolute
 *   http(s) URI; `timeout_seconds` 0 (= 30) or 1..600.
 * - `call.options.recording` (CallRecordingConfig, optional), checked like
 *   a SIP domain's `call_recording`: `recording_ready_uri` and
 *   `transcription_ready_uri` empty or absolute http(s) URIs (violations
 *   name `call.options.recording.recording_ready_uri` /
 *   `.transcription_ready_uri`); `post_processing[i]` must be a processing
 *   (POST_PROCESSING_UNSPECIFIED is a violation naming it). Trigger
 *   UNSPECIFIED or DISABLED stores no recording (the column is null and
 *   `options.recording` reads back unset); ANSWER / BRIDGE are stored as
 *   `calls.recording` ({trigger, postProcessing (deduplicated), readyUri})
 *   for the engine, with `transcribe` (DEFAULT) and
 *   `transcriptionReadyUri`: the recording is then transcribed when it
 *   completes (src/transcriptions).
 * - `call.labels`: at most 50 keys, keys 1..100 and values ..1000
 *   characters, and at most 10 kB (10,240 UTF-8 bytes) of keys and values
 *   together.
 * - Output-only fields in the request are ignored.
 * - At most CALL_CONCURRENCY_LIMIT calls of the project in flight
 *   (concurrency.ts): beyond it RESOURCE_EXHAUSTED CONCURRENT_CALL_LIMIT.
 * The call is created QUEUED, direction OUTGOING, transport PSTN,
 * create_method API — its QUEUED state update enqueued in the same
 * transaction — and handed to the engine after the transaction commits.
 */

import { and, eq } from "drizzle-orm";
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { type FieldViolation, invalidArgument, notFound } from "../../api/errors.js";
import { hasCreateToRecord, recordCreated } from "../../api/idempotency/scope.js";
import { newResourceId } from "../../api/ids.js";
import { labelViolations } from "../../api/labels.js";
import { parseResourceName } from "../../api/names.js";
import { keysetAfter, keysetOrder, type PageResult, readPage } from "../../api/pagination.js";
import type { Clock } from "../../clock.js";
import type { Db } from "../../db/client.js";
import { directClientOf } from "../../db/direct.js";
import {
  type CallRecordingSettings,
  type CallRow,
  calls,
  POST_PROCESSINGS,
  type PostProcessingValue,
  type StoredCallRecording,
} from "../../db/schema/index.js";
import { isTransientDatabaseError, transientDatabaseError } from "../../db/transient.js";
import { changeWithWebhook, rowsOf } from "../../events/outbox.js";
import { capabilityRefusal } from "../../numbering/capabilities.js";
import type { PhoneNumberInstancesDomain } from "../../numbering/phone-number-instances/domain.js";
import type { PhoneNumberInstance } from "../../numbering/phone-number-instances/model.js";
import { timedStatement } from "../../observability/metrics.js";
import { parseUri } from "../../sip/uri.js";
import { admitCall, admitCallDirect } from "./concurrency.js";
import { compileCallFilter } from "./filter.js";
import { callJson } from "./proto.js";

/**
 * CreateCall's insert as a fixed text, for the postgres.js client directly
 * (db/direct.ts): the columns CreateCall does not set take the schema's
 * defaults (CALL_DEFAULTS); labels and recording are JSON text, the handler
 * URIs a JSON array.
 */
const INSERT_CALL = `insert into calls (id, project_id, "to", "from", labels, state, direction, transport,
    create_method, handler_uris, state_update_uri, timeout_seconds, recording, create_time, engine_id)
  values ($1, $2, $3, $4, $5::text::jsonb, 'QUEUED', 'OUTGOING',
    case when $3::text like 'sip:%' or $3::text like 'sips:%' then 'SIP' else 'PSTN' end, 'API',
    array(select json_array_elements_text($6::text::json)), $7, $8, $9::text::jsonb, $10::timestamptz, $11)`;

/** INSERT_CALL with its QUEUED state update to state_update_uri ($7), in the same statement (outbox.ts). */
const INSERT_CALL_WITH_UPDATE = `with c as (${INSERT_CALL} returning id)
  insert into webhook_events (id, project_id, event_type, ordering_key, uris, body, state, attempt_count,
    next_attempt_time, create_time, call_id)
  select $12, $2, 'CALL_STATE_UPDATE', $13, array[$7::text], $14, 'PENDING', 0, $10::timestamptz,
    $10::timestamptz, c.id
  from c`;

/**
 * INSERT_CALL_WITH_UPDATE with the state update leased to the engine's
 * webhook worker ($15, until $16): a new call's first update is its key's
 * head. Returns its seq.
 */
const INSERT_CALL_WITH_LEASED_UPDATE = `with c as (${INSERT_CALL} returning id)
  insert into webhook_events (id, project_id, event_type, ordering_key, uris, body, state, attempt_count,
    next_attempt_time, create_time, call_id, lease_owner, lease_expire_time)
  select $12, $2, 'CALL_STATE_UPDATE', $13, array[$7::text], $14, 'PENDING', 0, $10::timestamptz,
    $10::timestamptz, c.id, $15, $16::timestamptz
  from c
  returning seq::float8 as seq`;

export const RESOURCE_TYPE = "voice.api.enfonica.com/Call";
export const COLLECTION = "calls";
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const MAX_TIMEOUT_SECONDS = 600;
export const MAX_HANDLER_URIS = 5;
export const MAX_LABEL_BYTES = 10 * 1024;

/** The columns of a new call that CreateCall does not set: the schema's defaults. */
export const CALL_DEFAULTS = {
  isPrivate: false,
  errorCode: "",
  errorMessage: "",
  originatingCallId: null,
  parentCallId: null,
  bridged: false,
  priceCurrency: null,
  priceUnits: null,
  priceNanos: null,
  endedBy: null,
  sipSourceIp: null,
  sipCallId: null,
  answerDurationMs: null,
  startTime: null,
  ringTime: null,
  answerTime: null,
  endTime: null,
} as const;

export interface CallInput {
  to: string;
  from: string;
  labels: Record<string, string>;
  /** undefined when the request has no options. */
  options:
    | {
        handlerUris: string[];
        stateUpdateUri: string;
        timeoutSeconds: number;
        /** CallRecordingConfig with enum values by proto name; undefined when unset. */
        recording?: CallRecordingInput | undefined;
      }
    | undefined;
}

/** `Call.options.recording` as given: the SIP domain's stored shape (enum values by proto name). */
export type CallRecordingInput = StoredCallRecording;

const RECORDING_FIELD = "call.options.recording";

function isPostProcessing(value: string): value is PostProcessingValue {
  return (POST_PROCESSINGS as readonly string[]).includes(value);
}

/**
 * What a (valid) CallRecordingConfig stores on the call: null unless the
 * trigger is ANSWER or BRIDGE.
 */
export function callRecordingSettings(config: CallRecordingInput | undefined): CallRecordingSettings | null {
  if (config === undefined || (config.trigger !== "ANSWER" && config.trigger !== "BRIDGE")) return null;
  return {
    trigger: config.trigger,
    postProcessing: [...new Set(config.postProcessing.filter(isPostProcessing))],
    readyUri: config.recordingReadyUri,
    // Stored only when asked for: rows of calls without transcription keep their shape.
    ...(config.transcribe === "DEFAULT"
      ? { transcribe: true, transcriptionReadyUri: config.transcriptionReadyUri }
      : {}),
  };
}

function recordingViolations(config: CallRecordingInput): FieldViolation[] {
  const v: FieldViolation[] = [];
  for (const [field, uri] of [
    ["recording_ready_uri", config.recordingReadyUri],
    ["transcription_ready_uri", config.transcriptionReadyUri],
  ] as const) {
    if (uri !== "" && !isHttpUrl(uri)) {
      v.push({
        field: `${RECORDING_FIELD}.${field}`,
        description: "must be an absolute http or https URI",
        reason: "string.uri",
      });
    }
  }
  config.postProcessing.forEach((p, i) => {
    if (!isPostProcessing(p)) {
      v.push({
        field: `${RECORDING_FIELD}.post_processing[${i}]`,
        description: `must be one of ${POST_PROCESSINGS.join(", ")}`,
        reason: "enum.defined_only",
      });
    }
  });
  return v;
}

export function callName(row: Pick<CallRow, "projectId" | "id">): string {
  return `projects/${row.projectId}/${COLLECTION}/${row.id}`;
}

function isCanonicalE164(value: string): boolean {
  const parsed = parsePhoneNumberFromString(value);
  return parsed?.isValid() === true && parsed.number === value;
}

/** A SIP URI a call can be placed to: `sip:` or `sips:`, a user and a host, no headers. */
export function isSipDestination(value: string): boolean {
  if (!/^sips?:/i.test(value)) return false;
  try {
    const uri = parseUri(value);
    return uri.user !== undefined && uri.user !== "" && uri.host !== "" && uri.headers === undefined;
  } catch {
    return false;
  }
}

function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

/** Everything wrong with `input` that can be told without the database. */
export function callViolations(input: CallInput): FieldViolation[] {
  const v: FieldViolation[] = [];
  if (input.to === "") v.push({ field: "call.to", description: "is required", reason: "required" });
  else if (!isCanonicalE164(input.to) && !isSipDestination(input.to)) {
    v.push({
      field: "call.to",
      description:
        "must be a valid phone number in E.164 form (+61491570156) or a SIP URI (sip:alice@example.com)",
      reason: "e164",
    });
  }
  if (input.from === "") v.push({ field: "call.from", description: "is required", reason: "required" });
  else if (!isCanonicalE164(input.from)) {
    v.push({
      field: "call.from",
      description: "must be a valid phone number in E.164 form (+61255501234)",
      reason: "e164",
    });
  }
  v.push(...labelViolations(input.labels, "call.labels"));
  let bytes = 0;
  for (const [k, val] of Object.entries(input.labels)) bytes += Buffer.byteLength(k) + Buffer.byteLength(val);
  if (bytes > MAX_LABEL_BYTES) {
    v.push({
      field: "call.labels",
      description: `keys and values together must be at most ${MAX_LABEL_BYTES} bytes`,
      reason: "labels.max_bytes",
    });
  }
  const o = input.options;
  if (o === undefined) {
    v.push({ field: "call.options", description: "is required", reason: "required" });
    return v;
  }
  if (o.handlerUris.length === 0) {
    v.push({
      field: "call.options.handler_uris",
      description: "at least one handler URI is required",
      reason: "repeated.min_items",
    });
  } else if (o.handlerUris.length > MAX_HANDLER_URIS) {
    v.push({
      field: "call.options.handler_uris",
      description: `at most ${MAX_HANDLER_URIS} handler URIs`,
      reason: "repeated.max_items",
    });
  }
  o.handlerUris.forEach((uri, i) => {
    if (!isHttpUrl(uri)) {
      v.push({
        field: `call.options.handler_uris[${i}]`,
        description: "must be an absolute http or https URI (tel: and sip: handlers are not supported yet)",
        reason: "string.uri",
      });
    }
  });
  if (o.stateUpdateUri !== "" && !isHttpUrl(o.stateUpdateUri)) {
    v.push({
      field: "call.options.state_update_uri",
      description: "must be an absolute http or https URI",
      reason: "string.uri",
    });
  }
  if (!Number.isInteger(o.timeoutSeconds) || o.timeoutSeconds < 0 || o.timeoutSeconds > MAX_TIMEOUT_SECONDS) {
    v.push({
      field: "call.options.timeout_seconds",
      description: `must be 1 to ${MAX_TIMEOUT_SECONDS} (0 means ${DEFAULT_TIMEOUT_SECONDS})`,
      reason: "int32.range",
    });
  }
  if (o.recording !== undefined) v.push(...recordingViolations(o.recording));
  return v;
}

/** Where created calls go: the engine. */
export interface CallStarter {
  /** The engine's id, registered: stamped on a call by its insert (liveness.ts). */
  registeredId(): Promise<string>;
  /**
   * Starts driving a call whose create committed; `queued`: its QUEUED state
   * update was enqueued leased to the worker, with the seq the insert gave it.
   */
  start(call: CallRow, plan?: CallPlan, queued?: { lease: QueuedLease; seq: number }): void;
  /**
   * A lease for a new call's QUEUED state update (the engine's worker
   * delivers it from memory, worker.ts EnqueueLease), with the body and id
   * it is enqueued with; undefined: enqueue it free.
   */
  leaseQueued?(call: CallRow): Promise<QueuedLease | undefined>;
  /** A call whose create failed after it may have committed: never started, ended soon if it exists. */
  inDoubt(callId: string): void;
}

/** A new call's QUEUED state update, to be enqueued leased (CallStarter.leaseQueued). */
export interface QueuedLease {
  readonly id: string;
  readonly body: string;
  readonly owner: string;
  readonly expiry: Date;
  /** The create committed with the update's `seq`: the worker delivers it (the engine, as it starts the call). */
  take(seq: number): void;
  /** The create was refused by the database (rolled back): nothing is held. */
  release(): void;
  /** The create failed: whether it committed is unknown (the worker takes back what it may have leased). */
  lost(): void;
}

/** How the engine connects an incoming call: call control (default) or a bridge to a PSTN number. */
export type CallPlan = { kind: "control" } | { kind: "bridge"; to: string; from: string };

export interface ListParams {
  pageSize: number;
  pageToken: string;
  filter: string;
}

export interface CallLimits {
  /** CALL_CONCURRENCY_LIMIT: calls in flight per project (concurrency.ts); 0 or absent: none. */
  concurrentCalls?: number;
}

export class CallsDomain {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly instances: PhoneNumberInstancesDomain,
    private readonly engine: CallStarter,
    private readonly limits: CallLimits = {},
  ) {}

  async create(projectId: string, input: CallInput): Promise<CallRow> {
    const violations = callViolations(input);
    let owner: PhoneNumberInstance | undefined;
    if (!violations.some((v) => v.field === "call.from")) {
      owner = await this.instances.findByNumber(input.from);
      if (owner === undefined || owner.projectId !== projectId || owner.lifecycleState !== "ACTIVE") {
        violations.push({
          field: "call.from",
          description: "must be a number of an ACTIVE phone number instance of this project",
          reason: "from.not_owned",
        });
      }
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const incapable = owner && capabilityRefusal(owner, input.from, "VOICE", "call.from");
    if (incapable !== undefined) throw incapable;
    const o = input.options!;
    const engineId = await this.engine.registeredId();
    const now = this.clock.now();
    // Every column given: the row is what the database stores, so the state
    // update's body is made from it and written by the insert's statement.
    const inserted: CallRow = {
      ...CALL_DEFAULTS,
      id: newResourceId(),
      projectId,
      to: input.to,
      from: input.from,
      labels: input.labels,
      state: "QUEUED",
      direction: "OUTGOING",
      transport: isSipDestination(input.to) ? "SIP" : "PSTN",
      createMethod: "API",
      handlerUris: o.handlerUris,
      stateUpdateUri: o.stateUpdateUri,
      timeoutSeconds: o.timeoutSeconds === 0 ? DEFAULT_TIMEOUT_SECONDS : o.timeoutSeconds,
      recording: callRecordingSettings(o.recording),
      createTime: now,
      engineId,
    };
    try {
      return await this.insert(inserted);
    } catch (err) {
      // The connection failed on the way: the call may have committed. It
      // is not started (the caller is told UNAVAILABLE), so it is ended.
      if (transientDatabaseError(err) === "unavailable") this.engine.inDoubt(inserted.id);
      throw err;
    }
  }

  /** Inserts the call (its QUEUED state update, its admission) and, once committed, starts it. */
  private async insert(inserted: CallRow): Promise<CallRow> {
    const { projectId, createTime: now } = inserted;
    // The QUEUED state update leased to the engine's worker, when it can take it.
    const queued = inserted.stateUpdateUri === "" ? undefined : await this.engine.leaseQueued?.(inserted);
    const client = directClientOf(this.db);
    if (client !== undefined && !hasCreateToRecord()) {
      // No Idempotency-Key to record: the same transaction on the client
      // directly, its statements sent together (one round trip to the admission).
      const limit = this.limits.concurrentCalls ?? 0;
      const params: unknown[] = [
        inserted.id,
        projectId,
        inserted.to,
        inserted.from,
        JSON.stringify(inserted.labels),
        JSON.stringify(inserted.handlerUris),
        inserted.stateUpdateUri,
        inserted.timeoutSeconds,
        inserted.recording === null ? null : JSON.stringify(inserted.recording),
        now.toISOString(),
        inserted.engineId,
      ];
      const text =
        inserted.stateUpdateUri === ""
          ? INSERT_CALL
          : queued === undefined
            ? INSERT_CALL_WITH_UPDATE
            : INSERT_CALL_WITH_LEASED_UPDATE;
      if (queued !== undefined) {
        params.push(queued.id, callName(inserted), queued.body, queued.owner, queued.expiry.toISOString());
      } else if (text === INSERT_CALL_WITH_UPDATE) {
        params.push(newResourceId(), callName(inserted), callJson(inserted));
      }
      let seq: number | undefined;
      // Outcomes of the transaction's statements, settled (read after COMMIT).
      const outcomes: Promise<unknown>[] = [];
      await client
        .begin((sql) => {
          // postgres.js sends a query once asked to (`execute`): the insert first.
          outcomes.push(
            settled(
              timedStatement(text, () =>
                sql
                  .unsafe(text, params as never[], { prepare: true })
                  .execute()
                  .then((rows) => {
                    seq = (rows[0] as { seq?: number } | undefined)?.seq;
                  }),
              ),
            ),
          );
          // Last: the project's admissions wait for each other from here to the commit only.
          if (limit > 0) outcomes.push(settled(admitCallDirect(sql, projectId, limit)));
          // Nothing awaited: postgres.js sends COMMIT right behind these, in the
          // same pipeline (no round trip while the admission lock is held). A
          // statement that fails aborts the transaction, and COMMIT rolls it back.
        })
        .catch((err: unknown) => createFailed(queued, err));
      for (const outcome of await Promise.all(outcomes)) {
        if (outcome !== undefined) createFailed(queued, outcome);
      }
      this.started(inserted, queued, seq);
      return inserted;
    }
    let seq: number | undefined;
    const row = await this.db
      .transaction(async (tx) => {
        const insert = tx.insert(calls).values(inserted);
        // The QUEUED state update, in the same statement (so transaction) as the call.
        if (inserted.stateUpdateUri === "") await insert;
        else {
          const enqueued = rowsOf<{ seq: number }>(
            await tx.execute(
              changeWithWebhook(
                insert.returning({ id: calls.id }).getSQL(),
                {
                  projectId,
                  eventType: "CALL_STATE_UPDATE",
                  uris: [inserted.stateUpdateUri],
                  body: queued?.body ?? callJson(inserted),
                  orderingKey: callName(inserted),
                  now,
                },
                queued,
              ),
            ),
          );
          seq = enqueued[0] === undefined ? undefined : Number(enqueued[0].seq);
        }
        // Idempotency-Key (src/api/idempotency/): committed with the call.
        await recordCreated(tx, callName(inserted));
        // Last: the project's admissions wait for each other from here to the commit only.
        await admitCall(tx, projectId, this.limits.concurrentCalls ?? 0);
        return inserted;
      })
      .catch((err: unknown) => createFailed(queued, err));
    this.started(row, queued, seq);
    return row;
  }

  /** After the commit: the engine drives the call from here, and its worker takes the leased QUEUED update. */
  private started(row: CallRow, queued: QueuedLease | undefined, seq: number | undefined): void {
    if (queued !== undefined && seq === undefined) queued.lost();
    this.engine.start(
      row,
      undefined,
      queued === undefined || seq === undefined ? undefined : { lease: queued, seq },
    );
  }

  async get(name: string): Promise<CallRow> {
    const ref = parseResourceName(name, COLLECTION, "name");
    const [row] = await this.db
      .select()
      .from(calls)
      .where(and(eq(calls.projectId, ref.projectId), eq(calls.id, ref.id)));
    if (row === undefined) throw notFound(RESOURCE_TYPE, name);
    return row;
  }

  list(projectId: string, params: ListParams): Promise<PageResult<CallRow>> {
    const condition = compileCallFilter(params.filter);
    return readPage(
      {
        pageSize: params.pageSize,
        pageToken: params.pageToken,
        query: { method: "ListCalls", parent: projectId, filter: params.filter.trim() },
      },
      (after, limit) =>
        this.db
          .select()
          .from(calls)
          .where(
            and(eq(calls.projectId, projectId), condition, keysetAfter(calls.createTime, calls.id, after)),
          )
          .orderBy(...keysetOrder(calls.createTime, calls.id))
          .limit(limit),
    );
  }
}

/**
 * A create that failed with `err`: its QUEUED lease is given back, or, when
 * whether it committed is unknown (the connection failed on the way, the
 * server cancelled it), left to the worker's take-back. Throws `err`.
 */
function createFailed(queued: QueuedLease | undefined, err: unknown): never {
  if (isTransientDatabaseError(err)) queued?.lost();
  else queued?.release();
  throw err;
}

/** `p`'s rejection as its value (undefined when it resolved): read later, never unhandled. */
function settled(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (err: unknown) => err ?? new Error("statement failed"),
  );
}
