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
 *   - `NO_HANDLER`: the instance has no incoming_call_handler_uris.
 * - The handlers used are the instance's leading absolute http(s) URIs, in
 *   order, falling through on failure (a `tel:`/`sip:` URI after them is
 *   not reached: no fall-through from markup to forwarding yet); they are
 *   copied onto the call when it is created.
 * - When the first handler URI is `tel:+N` the call is forwarded to that
 *   number, when `sip:user@host` to that SIP address: the engine places a
 *   leg there (caller ID: the caller's number, empty when private) and
 *   bridges it once answered (plan `bridge`, see engine.ts); its busy, no
 *   answer or failure ends the call with that state (no fall-through to the
 *   next URI yet).
 * - The call is recorded RINGING (it rang at us), direction INCOMING,
 *   transport PSTN, create_method INCOMING_CALL, create_time = start_time =
 *   ring_time, no options (no state updates, see engine.ts), and handed to
 *   the engine, which answers it and runs its markup.
 *
 * SIP domain calls: `to` is the Request-URI's user part, `sourceIp`
 * required; `user` non-empty means the simulated request authenticated as a
 * domain user. SipDomainsDomain.resolveSipCall decides (authorization rules
 * 1-5); for a domain with a channel_limit (collaboration type) it is asked
 * again with the number of the domain's calls not yet ended (incoming SIP
 * calls whose `to` is at its FQDN; counted, then inserted — not under a
 * lock, so simultaneous injections can overshoot by the race). A refusal is
 * FAILED_PRECONDITION with resolveSipCall's code as the reason. The Call:
 * transport SIP, `to` `sip:{to}@{fqdn}`, `from` the given SIP URI or
 * `sip:{from|user|anonymous}@{sourceIp}` (`anonymous` when private);
 * then by call_termination_mode:
 * - PROGRAMMABLE: markup from call_termination_handler_uris;
 * - PSTN_TRUNK: `to` must be E.164; the engine bridges it to a PSTN leg
 *   (plan `bridge`, see engine.ts), caller ID `from` when it is E.164;
 * - DISABLED: FAILED_PRECONDITION `TERMINATION_DISABLED`.
 */
import { and, eq, like, notInArray } from "drizzle-orm";
import { type FieldViolation, failedPrecondition, invalidArgument } from "../../api/errors.js";
import { newResourceId } from "../../api/ids.js";
import type { Clock } from "../../clock.js";
import type { Db } from "../../db/client.js";
import { type CallRow, calls } from "../../db/schema/index.js";
import type { NumberDirectory } from "../../messaging/messages/incoming.js";
import { parseE164 } from "../../messaging/unsubscribers/domain.js";
import type { SipCallRequest, SipCallResolution } from "../sip-domains/domain.js";
import type { CallPlan, CallStarter } from "./domain.js";
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
}

export interface IncomingCallsDeps {
  db: Db;
  numbers: NumberDirectory;
  clock: Clock;
  engine: CallStarter;
  /** Authorizes and routes calls to SIP domains (SipDomainsDomain). */
  sipDomains: { resolveSipCall(call: SipCallRequest): Promise<SipCallResolution> };
}

function isHttpUri(uri: string): boolean {
  return /^https?:\/\//i.test(uri);
}

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
    const uris = instance.incomingCallHandlerUris;
    if (uris.length === 0) {
      throw failedPrecondition(
        IncomingCallRejection.NoHandler,
        `${instance.name} has no incoming_call_handler_uris`,
        { to: input.to, phone_number_instance: instance.name },
      );
    }
    const first = uris.findIndex((u) => !isHttpUri(u));
    const handlerUris = first === -1 ? [...uris] : uris.slice(0, first);
    const call = {
      projectId: instance.projectId,
      to: input.to,
      from: input.isPrivate ? "" : input.from,
      isPrivate: input.isPrivate,
      transport: "PSTN" as const,
    };
    if (handlerUris.length === 0) {
      // The first handler forwards: tel:+N to that number, sip:... to that address.
      const target = uris[0]!;
      const forwardTo = /^tel:/i.test(target) ? target.slice(4) : target;
      return this.record(
        { ...call, handlerUris: [target] },
        { kind: "bridge", to: forwardTo, from: call.from },
      );
    }
    return this.record({ ...call, handlerUris });
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
    let resolution = await this.deps.sipDomains.resolveSipCall(request);
    if (resolution.allow && resolution.domain.channelLimit !== undefined) {
      const activeCalls = await this.activeSipCalls(resolution.domain.fqdn);
      resolution = await this.deps.sipDomains.resolveSipCall({ ...request, activeCalls });
    }
    if (!resolution.allow) {
      const metadata: Record<string, string> = { to: input.to, source_ip: input.sourceIp };
      if (resolution.domain !== undefined) metadata.sip_domain = resolution.domain.name;
      throw failedPrecondition(resolution.code, resolution.reason, metadata);
    }
    const domain = resolution.domain;
    const to = `sip:${input.to}@${domain.fqdn}`;
    const fromUser = input.isPrivate ? "anonymous" : input.from || input.user || "anonymous";
    const from = fromUser.startsWith("sip:") ? fromUser : `sip:${fromUser}@${input.sourceIp}`;
    const base = {
      projectId: domain.projectId,
      to,
      from,
      isPrivate: input.isPrivate,
      transport: "SIP" as const,
    };
    switch (domain.callTerminationMode) {
      case "PROGRAMMABLE":
        return this.record({ ...base, handlerUris: [...domain.callTerminationHandlerUris] });
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
        const callerId = input.isPrivate ? "" : (parseE164(input.from) ?? "");
        return this.record({ ...base, handlerUris: [] }, { kind: "bridge", to: input.to, from: callerId });
      }
      default:
        throw failedPrecondition(
          IncomingCallRejection.TerminationDisabled,
          `${domain.name} has call termination disabled`,
          { to: input.to, sip_domain: domain.name },
        );
    }
  }

  /** Calls of the domain not yet ended (SIP calls whose `to` is at its FQDN). */
  private async activeSipCalls(fqdn: string): Promise<number> {
    const rows = await this.deps.db
      .select({ id: calls.id })
      .from(calls)
      .where(
        and(
          eq(calls.transport, "SIP"),
          eq(calls.direction, "INCOMING"),
          like(calls.to, `%@${fqdn.replace(/[\\%_]/g, (c) => `\\${c}`)}`),
          notInArray(calls.state, [...TERMINAL_STATES]),
        ),
      );
    return rows.length;
  }

  private async record(
    call: Pick<CallRow, "projectId" | "to" | "from" | "isPrivate" | "transport" | "handlerUris">,
    plan: CallPlan = { kind: "control" },
  ): Promise<CallRow> {
    const now = this.deps.clock.now();
    const [row] = (await this.deps.db
      .insert(calls)
      .values({
        id: newResourceId(),
        ...call,
        labels: {},
        state: "RINGING",
        direction: "INCOMING",
        createMethod: "INCOMING_CALL",
        stateUpdateUri: "",
        timeoutSeconds: 0,
        createTime: now,
        startTime: now,
        ringTime: now,
      })
      .returning()) as [CallRow];
    this.deps.engine.start(row, plan);
    return row;
  }
}
