/**
 * Incoming calls: what happens when the network (the simulator, for now)
 * delivers a call to a number.
 *
 * - `to` must be a valid number written in E.164 (libphonenumber-js full
 *   metadata); `from` too, unless `isPrivate` (then it may be empty or a
 *   number, and it is not recorded: the Call's `from` is empty and
 *   `is_private` true). Violations are INVALID_ARGUMENT naming `to`, `from`.
 *   Any of `sipDomain`, `sourceIp`, `user` given makes it a SIP domain
 *   call (below).
 * - The call belongs to the phone number instance holding `to` (the
 *   range's instance for a number of a range). The network does not
 *   connect it — FAILED_PRECONDITION with an ErrorInfo reason, nothing
 *   recorded — when:
 *   - `NUMBER_NOT_IN_SERVICE`: no instance holds `to`, or it is not ACTIVE;
 *   - `NUMBER_NOT_VOICE_CAPABLE`: the number's capabilities lack VOICE (an
 *     SMS-only number, numbering/capabilities.ts);
 *   - `NO_HANDLER`: the instance has no incoming_call_handler_uris.
 * - All of the instance's incoming_call_handler_uris — absolute http(s)
 *   markup handlers, `tel:+N` and `sip:user@host` forwarding targets alike —
 *   are copied onto the call's handler_uris, in order, and the call is
 *   handed to the engine with plan `control`: the engine walks the list,
 *   falling through from one URI to the next (markup or forwarding) on
 *   failure (see engine.ts).
 * - Call recording: the instance's call_recording_trigger ANSWER / BRIDGE
 *   is copied onto the call (`calls.recording` = {trigger, postProcessing:
 *   [], readyUri: ""}); DISABLED leaves it null.
 * - The call is recorded RINGING (it rang at us), direction INCOMING,
 *   transport PSTN (with `sip_call_id` when a carrier trunk's INVITE brought
 *   it), create_method INCOMING_CALL, create_time = start_time =
 *   ring_time, no options (no state updates, see engine.ts), and handed to
 *   the engine (after the insert has committed), which answers it and runs
 *   its handlers.
 *
 * SIP domain calls: `to` is the Request-URI's user part, `sourceIp`
 * required; `user` non-empty means the simulated request authenticated as a
 * domain user. SipDomainsDomain.resolveSipCall decides (authorization rules
 * 1-5). For a domain with a channel_limit (collaboration type), the
 * domain's calls not yet ended (incoming SIP calls whose `to` is at its
 * FQDN) are counted and the new call inserted in ONE transaction that first
 * takes the transaction-level advisory lock
 * `pg_advisory_xact_lock(hashtext('sip_domain_calls:' || id))`: calls to one
 * domain are admitted one at a time, so simultaneous calls cannot overshoot
 * channel_limit (`channelLimitRefusal` decides, CHANNEL_LIMIT_REACHED). A
 * refusal is FAILED_PRECONDITION with resolveSipCall's code as the reason.
 * The Call: transport SIP, `to` `sip:{to}@{fqdn}`, `from` the given SIP URI
 * or `sip:{from|user|anonymous}@{sourceIp}` (`anonymous` when private),
 * `recording` from the domain's call_recording (trigger ANSWER / BRIDGE;
 * otherwise null); then by call_termination_mode:
 * - PROGRAMMABLE: markup from call_termination_handler_uris;
 * - PSTN_TRUNK: `to` must be E.164; the engine bridges it to a PSTN leg
 *   (plan `bridge`, see engine.ts), caller ID `from` when it is E.164 (or
 *   a `sip:` URI whose user part is) and the project holds that number;
 * - DISABLED: FAILED_PRECONDITION `TERMINATION_DISABLED`.
 */
import { and, count, eq, like, notInArray, sql } from "drizzle-orm";
import { type FieldViolation, failedPrecondition, invalidArgument } from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import type { Clock } from "../../clock.js";
import type { Db, DbOrTx, Tx } from "../../db/client.js";
import { groupedRows } from "../../db/group-commit.js";
import {
  type CallRecordingSettings,
  type CallRow,
  calls,
  type RecordingTriggerValue,
} from "../../db/schema/index.js";
import { transientDatabaseError } from "../../db/transient.js";
import type { NumberDirectory } from "../../messaging/messages/incoming.js";
import { parseE164 } from "../../messaging/unsubscribers/domain.js";
import { capabilityRefusal } from "../../numbering/capabilities.js";
import {
  channelLimitRefusal,
  type SipCallRequest,
  type SipCallResolution,
} from "../sip-domains/call-resolution.js";
import type { SipDomain } from "../sip-domains/model.js";
import { CALL_DEFAULTS, type CallPlan, type CallStarter, callRecordingSettings } from "./domain.js";
import { TERMINAL_STATES } from "./engine.js";

export const IncomingCallRejection = {
  NumberNotInService: "NUMBER_NOT_IN_SERVICE",
  NoHandler: "NO_HANDLER",
  TerminationDisabled: "TERMINATION_DISABLED",
} as const;

export interface IncomingCall {
  to: string;
  from: string;
  isPrivate: boolean;
  sipDomain: string;
  sourceIp: string;
  user: string;
  /** The SIP Call-ID of the INVITE that brought the call (the SIP edge); absent on the simulator. */
  sipCallId?: string;
}

export interface IncomingCallsDeps {
  db: Db;
  numbers: NumberDirectory;
  clock: Clock;
  engine: CallStarter;
  /** Authorizes and routes calls to SIP domains (SipDomainsDomain). */
  sipDomains: { resolveSipCall(call: SipCallRequest): Promise<SipCallResolution> };
}

/** The recording of a number call: the instance's call_recording_trigger. */
export function instanceRecording(trigger: RecordingTriggerValue): CallRecordingSettings | null {
  return trigger === "ANSWER" || trigger === "BRIDGE" ? { trigger, postProcessing: [], readyUri: "" } : null;
}

type NewIncomingCall = Pick<
  CallRow,
  "projectId" | "to" | "from" | "isPrivate" | "transport" | "handlerUris" | "recording"
> &
  Partial<Pick<CallRow, "sipSourceIp" | "sipCallId">>;

function phoneViolations(field: string, value: string): FieldViolation[] {
  if (value === "") return [{ field, description: "is required", reason: "required" }];
  if (parseE164(value) === undefined) {
    return [
      {
        field,
        description: "must be a valid phone number in E.164 format, for example +61491570156",
        reason: "phone.e164",
      },
    ];
  }
  return [];
}

/** An incoming call's row: the columns `IncomingCalls.insert` sets, the rest the schema's defaults. */
const INSERT_INCOMING_CALL = `insert into calls (id, project_id, "to", "from", is_private, labels, state, direction,
    transport, create_method, handler_uris, state_update_uri, timeout_seconds, recording, create_time, start_time,
    ring_time, engine_id, sip_source_ip, sip_call_id)
  values ($1, $2, $3, $4, $5, '{}'::jsonb, 'RINGING', 'INCOMING', $6, 'INCOMING_CALL',
    array(select json_array_elements_text($7::text::json)), '', 0, $8::text::jsonb, $9::timestamptz, $9::timestamptz,
    $9::timestamptz, $10, $11, $12)`;

export class IncomingCalls {
  constructor(private readonly deps: IncomingCallsDeps) {}

  /** Delivers `input` to the project of the instance holding `input.to`; returns the recorded call. */
  async receive(input: IncomingCall): Promise<CallRow> {
    if (input.sipDomain !== "" || input.sourceIp !== "" || input.user !== "") return this.receiveSip(input);
    const violations = phoneViolations("to", input.to);
    if (!(input.isPrivate && input.from === "")) violations.push(...phoneViolations("from", input.from));
    if (violations.length > 0) throw invalidArgument(violations);

    const instance = await this.deps.numbers.findByNumber(input.to);
    if (instance === undefined || instance.lifecycleState !== "ACTIVE") {
      const metadata: Record<string, string> = { to: input.to };
      if (instance !== undefined) metadata.lifecycle_state = instance.lifecycleState;
      throw failedPrecondition(
        IncomingCallRejection.NumberNotInService,
        instance === undefined
          ? `${input.to} is not held by any phone number instance`
          : `${input.to} is held by an instance that is ${instance.lifecycleState}, not ACTIVE`,
        metadata,
      );
    }
    const incapable = capabilityRefusal(instance, input.to, "VOICE");
    if (incapable !== undefined) throw incapable;
    const uris = instance.incomingCallHandlerUris;
    if (uris.length === 0) {
      throw failedPrecondition(
        IncomingCallRejection.NoHandler,
        `${instance.name} has no incoming_call_handler_uris`,
        { to: input.to, phone_number_instance: instance.name },
      );
    }
    // Markup and forwarding URIs alike: the engine walks them in order.
    return this.record({
      projectId: instance.projectId,
      to: input.to,
      from: input.isPrivate ? "" : input.from,
      isPrivate: input.isPrivate,
      transport: "PSTN",
      handlerUris: [...uris],
      recording: instanceRecording(instance.callRecordingTrigger),
      // A call from a carrier trunk (the SIP edge): the router hands it to the SipCarrier.
      ...(input.sipCallId === undefined ? {} : { sipCallId: input.sipCallId }),
    });
  }

  /** A call to a SIP domain: resolveSipCall decides, then the domain's termination mode routes it. */
  private async receiveSip(input: IncomingCall): Promise<CallRow> {
    const violations: FieldViolation[] = [];
    if (input.to === "") violations.push({ field: "to", description: "is required", reason: "required" });
    else if (!/^[^\s@:;]+$/.test(input.to)) {
      violations.push({
        field: "to",
        description: "must be the dialled user part (a number such as +61491570156), without sip: or @",
        reason: "sip.user",
      });
    }
    if (input.sourceIp === "") {
      violations.push({ field: "source_ip", description: "is required for a SIP call", reason: "required" });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const request: SipCallRequest = {
      domainName: input.sipDomain,
      sourceIp: input.sourceIp,
      // The simulated network reports `user` as a user the request authenticated as.
      authenticatedUser: input.user !== "",
    };
    const resolution = await this.deps.sipDomains.resolveSipCall(request);
    const refused = (r: SipCallResolution & { allow: false }) => {
      const metadata: Record<string, string> = { to: input.to, source_ip: input.sourceIp };
      if (r.domain !== undefined) metadata.sip_domain = r.domain.name;
      return failedPrecondition(r.code, r.reason, metadata);
    };
    if (!resolution.allow) throw refused(resolution);
    const domain = resolution.domain;
    // channel_limit: counted and inserted under the domain's lock (see the header).
    const admit =
      domain.channelLimit === undefined
        ? undefined
        : async (tx: Tx) => {
            await lockDomainCalls(tx, domain);
            const full = channelLimitRefusal(domain, await activeSipCalls(tx, domain.fqdn));
            if (full !== undefined) throw refused(full);
          };
    const to = `sip:${input.to}@${domain.fqdn}`;
    const fromUser = input.isPrivate ? "anonymous" : input.from || input.user || "anonymous";
    const from = fromUser.startsWith("sip:") ? fromUser : `sip:${fromUser}@${input.sourceIp}`;
    const base = {
      projectId: domain.projectId,
      to,
      from,
      isPrivate: input.isPrivate,
      transport: "SIP" as const,
      sipSourceIp: input.sourceIp,
      ...(input.sipCallId === undefined ? {} : { sipCallId: input.sipCallId }),
      recording: callRecordingSettings(domain.callRecording),
    };
    switch (domain.callTerminationMode) {
      case "PROGRAMMABLE":
        return this.record(
          { ...base, handlerUris: [...domain.callTerminationHandlerUris] },
          { kind: "control" },
          admit,
        );
      case "PSTN_TRUNK": {
        if (parseE164(input.to) === undefined) {
          throw invalidArgument([
            {
              field: "to",
              description: "a PSTN trunk call must dial a valid number in E.164 (+61491570156)",
              reason: "phone.e164",
            },
          ]);
        }
        // Caller ID: `from` when it is a number, or the user part of a SIP `from` that is one;
        // the engine presents it only when the project holds it (CallEngine.checkedCallerNumber).
        const callerId = input.isPrivate
          ? ""
          : (parseE164(input.from) ?? parseE164(sipUserOf(input.from)) ?? "");
        return this.record(
          { ...base, handlerUris: [] },
          { kind: "bridge", to: input.to, from: callerId },
          admit,
        );
      }
      default:
        throw failedPrecondition(
          IncomingCallRejection.TerminationDisabled,
          `${domain.name} has call termination disabled`,
          { to: input.to, sip_domain: domain.name },
        );
    }
  }

  /**
   * Inserts the call — in one transaction after `admit` (which may throw to
   * refuse it) when there is one — and, once committed, starts the engine.
   */
  private async record(
    call: NewIncomingCall,
    plan: CallPlan = { kind: "control" },
    admit?: (tx: Tx) => Promise<void>,
  ): Promise<CallRow> {
    const id = newResourceId();
    const engineId = await this.deps.engine.registeredId();
    let row: CallRow;
    try {
      row =
        admit === undefined
          ? await this.insert(this.deps.db, id, engineId, call)
          : await this.deps.db.transaction(async (tx) => {
              await admit(tx);
              return this.insert(tx, id, engineId, call);
            });
    } catch (err) {
      // The connection failed on the way: the call may have committed. The
      // caller is refused, so the call, if it is there, is ended.
      if (transientDatabaseError(err) === "unavailable") this.deps.engine.inDoubt(id);
      throw err;
    }
    // Only after the commit: the engine must see (and may update) the row.
    this.deps.engine.start(row, plan);
    return row;
  }

  /**
   * Inserts the call. Every column is known here (the schema's defaults for
   * the rest, CALL_DEFAULTS), so the row is built, not read back: outside a
   * transaction one fixed statement prepared once per connection
   * (INSERT_INCOMING_CALL), inside one (an admission) drizzle's insert.
   */
  private async insert(db: DbOrTx, id: string, engineId: string, call: NewIncomingCall): Promise<CallRow> {
    const now = this.deps.clock.now();
    const row: CallRow = {
      ...CALL_DEFAULTS,
      id,
      ...call,
      sipSourceIp: call.sipSourceIp ?? null,
      sipCallId: call.sipCallId ?? null,
      engineId,
      labels: {},
      state: "RINGING",
      direction: "INCOMING",
      createMethod: "INCOMING_CALL",
      stateUpdateUri: "",
      timeoutSeconds: 0,
      createTime: now,
      startTime: now,
      ringTime: now,
    };
    if (db === this.deps.db) {
      // Committed with the engine's other writes of this turn (db/group-commit.ts).
      await groupedRows(db, INSERT_INCOMING_CALL, [
        row.id,
        row.projectId,
        row.to,
        row.from,
        row.isPrivate,
        row.transport,
        JSON.stringify(row.handlerUris),
        row.recording === null ? null : JSON.stringify(row.recording),
        now.toISOString(),
        engineId,
        row.sipSourceIp,
        row.sipCallId,
      ]);
    } else {
      await db.insert(calls).values(row);
    }
    return row;
  }
}

/**
 * Serialises the admission of calls to `domain` until the transaction ends
 * (PostgreSQL and PGlite alike): a transaction-level advisory lock keyed by
 * the domain id.
 */
async function lockDomainCalls(tx: Tx, domain: Pick<SipDomain, "id">): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`sip_domain_calls:${domain.id}`}))`);
}

/** Calls of the domain not yet ended (incoming SIP calls whose `to` is at its FQDN). */
async function activeSipCalls(db: DbOrTx, fqdn: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(calls)
    .where(
      and(
        eq(calls.transport, "SIP"),
        eq(calls.direction, "INCOMING"),
        like(calls.to, `%@${fqdn.replace(/[\\%_]/g, (c) => `\\${c}`)}`),
        notInArray(calls.state, [...TERMINAL_STATES]),
      ),
    );
  return row?.n ?? 0;
}

/** The user part of a `sip:user@host` URI, "" for anything else. */
function sipUserOf(uri: string): string {
  const m = /^sips?:([^@;?]+)@/i.exec(uri);
  if (m === null) return "";
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return "";
  }
}
