/**
 * Connecting a call to others: `<Call>` with its Endpoints, and forwarding
 * (a `tel:` / `sip:` handler URI, a PSTN_TRUNK SIP domain). Every attempt is
 * a Call resource of its own — direction OUTGOING, create_method
 * PARENT_CALL, originating_call = the parent, the parent's state_update_uri
 * (its state updates go where the parent's go), timeout_seconds = the
 * attempt's ring time, `to` the endpoint (transport PSTN for a number, SIP
 * for a SIP URI), `from` the caller ID.
 *
 * Strategies:
 * - `linear`: one endpoint after the other, each ringing up to
 *   TimeoutSeconds; the next is tried whatever the reason the previous did
 *   not connect (busy, rejected, no answer, failed);
 * - `failover`: in order as well, but the next endpoint is tried only when
 *   the previous one FAILED (the network could not deliver it); busy,
 *   rejected or not answered stops there;
 * - `simultaneous`: all endpoints ring at once; the first to answer is
 *   bridged, the others are hung up (NOT_ANSWERED, error_code
 *   ANSWERED_ELSEWHERE).
 * The answered leg is bridged with the parent (the parent's ringing
 * incoming leg is answered first): both calls get `bridged` true. The
 * bridge lasts until either party hangs up or MaxDurationSeconds pass (then
 * the child is hung up). A child still ringing when the parent ends ends
 * NOT_ANSWERED, error_code CANCELLED.
 *
 * The result (for the action's NextUri) is the last attempt's: parameters
 * `action` = CALL, `call` = its name, `callState` = its state
 * (COMPLETED after a bridge), `errorCode` = its error code (empty when
 * none), `answerDurationSeconds` = seconds it was answered (0 when never).
 */

import type { CallRow } from "../../db/schema/index.js";
import type { ActiveCall, Outcome } from "./active-call.js";
import { DEFAULT_TIMEOUT_SECONDS } from "./domain.js";

export interface DialTarget {
  /** E.164 number or SIP URI. */
  to: string;
  transport: "PSTN" | "SIP";
}

export interface DialRequest {
  targets: readonly DialTarget[];
  strategy: "linear" | "simultaneous" | "failover";
  /** Ring time of each attempt. */
  timeoutSeconds: number;
  /** Longest bridge; the child is hung up then. */
  maxDurationSeconds: number;
  /** Presented to the endpoints; empty for none (withheld). */
  callerId: string;
  /** Presented to SIP endpoints instead of `callerId` when set: a SIP caller's URI (callerOf). */
  sipCallerId?: string;
}

/** A caller ID to present: `callerId` to numbers, `sipCallerId` (when set) to SIP endpoints. */
export type Presented = Pick<DialRequest, "callerId" | "sipCallerId">;

export interface DialResult {
  /** Whether an attempt was answered and bridged with the parent. */
  bridged: boolean;
  /** The last attempt's end (FAILED NO_ENDPOINT when none was made). */
  outcome: Outcome;
  /** NextUri parameters. */
  parameters: Record<string, string>;
}

/** Longest bridge of a forwarded call (4 h, the markup's MaxDurationSeconds default). */
export const FORWARD_MAX_SECONDS = 14_400;

/** A target from a `tel:` / `sip:` handler URI or a bare number. */
export function targetOf(uri: string): DialTarget {
  if (/^tel:/i.test(uri)) return { to: uri.slice(4), transport: "PSTN" };
  if (/^sips?:/i.test(uri)) return { to: uri, transport: "SIP" };
  return { to: uri, transport: "PSTN" };
}

/** A forwarding: one target, linear, the default ring time. */
export function forwardRequest(uri: string, caller: Presented): DialRequest {
  return {
    targets: [targetOf(uri)],
    strategy: "linear",
    timeoutSeconds: DEFAULT_TIMEOUT_SECONDS,
    maxDurationSeconds: FORWARD_MAX_SECONDS,
    ...caller,
  };
}

const E164 = /^\+[1-9]\d{1,14}$/;

/**
 * The caller of `row` as its child legs present it. A call from the PSTN:
 * its number (`from`; "" when private). A call from a SIP endpoint (an
 * incoming SIP call, `from` = `sip:<user>@<host>`): `callerId` the user part
 * when it is an E.164 number ("" otherwise: numbers only go to the PSTN),
 * and `sipCallerId` `sip:<user>@<the called domain's FQDN>` for SIP
 * endpoints — the user the caller is, at the domain it called (never the
 * caller's own host, an address of its network). A private caller (Privacy:
 * id, or From anonymous) is presented as nobody: `callerId` "", no
 * `sipCallerId` (the SIP carrier then sends `anonymous`).
 */
export function callerOf(
  row: Pick<CallRow, "from" | "to" | "transport" | "direction" | "isPrivate">,
): Presented {
  if (row.isPrivate) return { callerId: "" };
  if (row.transport !== "SIP" || row.direction !== "INCOMING") {
    return { callerId: E164.test(row.from) ? row.from : "" };
  }
  const user = /^sips?:([^@;?]+)@/i.exec(row.from)?.[1];
  const host = /^sips?:[^@;?]+@([^;?>]+)/i.exec(row.to)?.[1];
  if (user === undefined || user.toLowerCase() === "anonymous") return { callerId: "" };
  let decoded: string;
  try {
    decoded = decodeURIComponent(user);
  } catch {
    decoded = "";
  }
  const callerId = E164.test(decoded) ? decoded : "";
  return host === undefined ? { callerId } : { callerId, sipCallerId: `sip:${user}@${host}` };
}

/** Resolves with the first of `children` to answer, or undefined once none can. */
function firstAnswered(children: readonly ActiveCall[]): Promise<ActiveCall | undefined> {
  return new Promise((resolve) => {
    let open = children.length;
    if (open === 0) resolve(undefined);
    for (const child of children) {
      void child.answered.promise.then((answered) => {
        if (answered) resolve(child);
        else if (--open === 0) resolve(undefined);
      });
    }
  });
}

/** Bridges the answered `child` with `parent` until one of them ends or the maximum passes. */
async function bridge(parent: ActiveCall, child: ActiveCall, maxDurationSeconds: number): Promise<boolean> {
  if (!(await parent.ensureAnswered())) {
    await child.cancel("CANCELLED", "The parent call ended first");
    return false;
  }
  if (child.terminal || parent.terminal || child.leg === undefined || parent.leg === undefined) return false;
  parent.leg.bridge(child.leg);
  void parent.persist({ bridged: true });
  void child.persist({ bridged: true });
  parent.recorder?.onBridge();
  const scheduler = parent.engine.options.scheduler;
  const timer = scheduler.after(maxDurationSeconds, () => {
    void child.finish("COMPLETED");
  });
  await Promise.race([child.ended.promise, parent.ended.promise]);
  timer.cancel();
  return true;
}

/** Places the attempts of `request` from `parent` and bridges the one that answers. */
export async function dial(parent: ActiveCall, request: DialRequest): Promise<DialResult> {
  const engine = parent.engine;
  let last: ActiveCall | undefined;
  let winner: ActiveCall | undefined;
  if (request.strategy === "simultaneous") {
    const children: ActiveCall[] = [];
    for (const target of request.targets) {
      if (parent.terminal) break;
      children.push(await engine.startChild(parent, target, request));
    }
    winner = await firstAnswered(children);
    for (const child of children) {
      if (child !== winner) void child.cancel("ANSWERED_ELSEWHERE", "Another endpoint answered first");
    }
    last = winner ?? children.at(-1);
  } else {
    for (const target of request.targets) {
      if (parent.terminal) break;
      const child = await engine.startChild(parent, target, request);
      last = child;
      if (await child.answered.promise) {
        winner = child;
        break;
      }
      await child.ended.promise;
      if (request.strategy === "failover" && child.row.state !== "FAILED") break;
    }
  }
  const bridged = winner !== undefined && (await bridge(parent, winner, request.maxDurationSeconds));
  if (last === undefined) {
    return {
      bridged: false,
      outcome: { state: "FAILED", errorCode: "NO_ENDPOINT", errorMessage: "No endpoint was called" },
      parameters: {
        action: "CALL",
        call: "",
        callState: "",
        errorCode: "NO_ENDPOINT",
        answerDurationSeconds: "0",
      },
    };
  }
  // A bridged child may still be up when the parent ended; its end is written with the parent's.
  await last.ended.promise;
  const row = last.row;
  return {
    bridged,
    outcome: { state: row.state, errorCode: row.errorCode, errorMessage: row.errorMessage },
    parameters: {
      action: "CALL",
      call: last.name,
      callState: row.state,
      errorCode: row.errorCode,
      answerDurationSeconds: String(Math.round((row.answerDurationMs ?? 0) / 1000)),
    },
  };
}
