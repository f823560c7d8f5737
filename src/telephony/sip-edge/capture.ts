/**
 * The SIP edge's capture: what GetSipInfo shows of a real call. The SIP
 * transport's tap (src/sip/transport.ts) hands over every message crossing
 * the wire; this keeps those of the SIP dialogues that belong to calls and
 * writes them to the database (src/voice/sip-info/repository.ts), so that
 * every replica can answer for them.
 *
 * - Which messages: those whose Call-ID began with an INVITE request (sent or
 *   received): the INVITE, its digest challenge and the INVITE that answers
 *   it, provisional and final responses, ACK, CANCEL, and every in-dialog
 *   request after (BYE, re-INVITE, INFO, ...). OPTIONS pings, REGISTER and
 *   anything else outside an INVITE's Call-ID are ignored.
 * - Which calls: the SIP carrier `attach`es a call to the Call-ID that set it
 *   up (before its INVITE is sent, or once the INVITE it received became a
 *   call). Until then the dialogue's messages are held in memory, bounded
 *   (MAX_HELD_MESSAGES and MAX_HELD_DIALOGUE_BYTES per dialogue, within the
 *   call's bounds; MAX_HELD_BYTES in all: a flood of INVITEs costs little);
 *   a dialogue no call claims within PENDING_SECONDS is forgotten, unstored
 *   (a refused INVITE, a scanner, a challenge never answered).
 * - Bounds per call: the first SIP_CAPTURE_MAX_MESSAGES messages and
 *   SIP_CAPTURE_MAX_BYTES bytes are stored; once either would be passed the
 *   capture is truncated: later messages are only counted (stored as the
 *   capture's omitted counts). A single message above MAX_PCAP_PAYLOAD
 *   bytes cannot be one pcap packet and truncates too.
 * - Off the hot path: the tap reads the Call-ID and start line from the
 *   header bytes and queues the message; redaction (src/sip/redact.ts: no
 *   password digest, cnonce or SRTP key is ever written), parsing and the
 *   database write happen in batches every FLUSH_MS (waiting longer, up to
 *   MAX_BACKOFF_MS, while writes fail). A failed write's messages are lost,
 *   logged and counted (`switchboard_sip_capture_messages_total{outcome=
 *   "lost"}`), never thrown; a call that no longer exists (deleted with its
 *   project) is dropped from the capture without costing the others theirs.
 * - Memory: at most MAX_DIALOGUES dialogues are followed (the oldest no
 *   call claimed go first); a dialogue is forgotten ENDED_SECONDS after its
 *   BYE or a failure response to its first INVITE (unless an INVITE
 *   follows, as after a digest challenge), or after IDLE_SECONDS without a
 *   message.
 * - Addresses as the sockets reported them, except that IPv4-mapped IPv6
 *   addresses (`::ffff:a.b.c.d`, seen on a dual-stack listener) are written
 *   as IPv4, and a listener bound to every address (0.0.0.0, ::) — which
 *   cannot tell the address a datagram arrived on — is written as
 *   `localAddress` (the advertised host when it is an IP address).
 */
import { isIP } from "node:net";
import { Counter } from "prom-client";
import type { NewSipCaptureMessageRow } from "../../db/schema/index.js";
import type { Logger } from "../../log.js";
import { registry } from "../../observability/metrics.js";
import { redactSipMessage } from "../../sip/redact.js";
import type { WireAddress, WireMessage } from "../../sip/transport.js";
import type { CaptureBatch, CaptureUpsert } from "../../voice/sip-info/repository.js";
import { MAX_PCAP_PAYLOAD } from "../sip/pcap.js";

export const FLUSH_MS = 100;
export const PENDING_SECONDS = 60;
export const ENDED_SECONDS = 32;
export const IDLE_SECONDS = 6 * 3600;
export const MAX_DIALOGUES = 10_000;
/** Held per dialogue no call claimed yet (a call's setup is a handful of messages), and in all. */
export const MAX_HELD_MESSAGES = 32;
export const MAX_HELD_DIALOGUE_BYTES = 64 * 1024;
export const MAX_HELD_BYTES = 16 * 1024 * 1024;
/** Messages per database write; more wait for the next flush. */
const BATCH = 1000;
/** The longest wait between writes while they fail. */
const MAX_BACKOFF_MS = 5000;

const captured = new Counter({
  name: "switchboard_sip_capture_messages_total",
  help: "SIP messages of calls the capture stored, omitted (over a call's bound) or lost (a failed write)",
  labelNames: ["outcome"],
  registers: [registry],
});

/** Where batches go (the repository; a test may count them). */
export interface CaptureStore {
  write(batch: CaptureBatch): Promise<void>;
}

export interface SipCaptureOptions {
  store: CaptureStore;
  maxMessages: number;
  maxBytes: number;
  log: Logger;
  /** The address written for a listener bound to every address (0.0.0.0, ::). */
  localAddress?: string | undefined;
  /** For the ages of dialogues (default performance.now). */
  monotonicMs?: () => number;
  /** The time written as a capture's creation (default the system clock). */
  now?: () => Date;
}

/** One call's capture: its counters across every Call-ID attached to it. */
interface CallCapture {
  callId: string;
  sipCallId: string;
  createTime: Date;
  /** The next message's position. */
  seq: number;
  count: number;
  bytes: number;
  truncated: boolean;
  /** Omitted counts not yet written. */
  omittedMessages: number;
  omittedBytes: number;
  /** Whether its row has been written (else the next batch creates it). */
  stored: boolean;
  /** No longer captured: it does not exist (any more). */
  dead: boolean;
  /** Its messages in the queue, not yet taken by a batch. */
  queued: number;
  /** Dialogues followed for it; 0: it is forgotten once everything is written. */
  dialogues: number;
}

/** A Call-ID followed. */
interface Dialogue {
  sipCallId: string;
  call: CallCapture | undefined;
  /** Messages before a call claimed it. */
  held: WireMessage[];
  heldBytes: number;
  heldOmitted: { messages: number; bytes: number };
  lastMs: number;
  endedMs: number | undefined;
  /** A 2xx answered its INVITE. */
  established: boolean;
}

interface Queued {
  call: CallCapture;
  seq: number;
  sipCallId: string;
  message: WireMessage;
}

const HEAD_END = Buffer.from("\r\n\r\n");
const REGISTER_PREFIX = Buffer.from("REGISTER ", "latin1");
const INVITE_PREFIX = Buffer.from("INVITE ", "latin1");
const CALL_ID = /^(?:call-id|i)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*$/im;
const CSEQ_METHOD = /^cseq[ \t]*:[ \t]*\d+[ \t]+([A-Za-z]+)/im;
const FAILURE_STATUS = /^SIP\/2\.0 [3-6]\d\d /;
const MAPPED = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i;

/** Whether a write failed on a foreign key (PostgreSQL 23503): its call is gone. */
function isMissingCall(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Object && depth < 5; depth++) {
    if ((e as { code?: unknown }).code === "23503") return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Whether the bytes begin with `prefix`. */
function startsWith(data: Buffer, prefix: Buffer): boolean {
  return data.length >= prefix.length && data.compare(prefix, 0, prefix.length, 0, prefix.length) === 0;
}

/** The header section as text (latin1: one char per byte), without reading a large body. */
function headOf(data: Buffer): string {
  const end = data.indexOf(HEAD_END);
  return data.toString("latin1", 0, end < 0 ? data.length : end);
}

export class SipCapture {
  private readonly dialogues = new Map<string, Dialogue>();
  private readonly calls = new Map<string, CallCapture>();
  /**
   * The live calls whose capture row or omitted counts are still to be
   * written: a batch takes these and the calls of its messages, never a
   * scan of every call followed (thousands, for ENDED_SECONDS after they end).
   */
  private readonly news = new Set<CallCapture>();
  private queue: Queued[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private sweptMs = 0;
  private failStreak = 0;
  /** Bytes held for dialogues no call claimed yet. */
  private heldBytes = 0;
  private closed = false;
  private readonly nowMs: () => number;

  constructor(private readonly options: SipCaptureOptions) {
    this.nowMs = options.monotonicMs ?? (() => performance.now());
  }

  /** The transport's tap: cheap, synchronous, never throws. */
  readonly tap = (message: WireMessage): void => {
    if (this.closed) return;
    try {
      this.take(message);
    } catch (err) {
      this.options.log.warn({ err }, "SIP capture could not read a message");
    }
  };

  private take(message: WireMessage): void {
    // What can never be part of a followed dialogue is passed over before any text is made of it:
    // a REGISTER (never in a dialogue), and anything but an INVITE while no dialogue is followed.
    const data = message.data;
    if (startsWith(data, REGISTER_PREFIX)) return;
    if (this.dialogues.size === 0 && !startsWith(data, INVITE_PREFIX)) return;
    const head = headOf(data);
    const sipCallId = CALL_ID.exec(head)?.[1];
    if (sipCallId === undefined || sipCallId === "") return;
    const now = this.nowMs();
    if (now - this.sweptMs > 1000) this.sweep(now);
    let dialogue = this.dialogues.get(sipCallId);
    if (dialogue === undefined) {
      if (!head.startsWith("INVITE ")) return;
      dialogue = this.follow(sipCallId, now);
    }
    dialogue.lastMs = now;
    if (head.startsWith("INVITE ")) {
      if (!dialogue.established) dialogue.endedMs = undefined;
    } else if (head.startsWith("BYE ")) dialogue.endedMs ??= now;
    else if (head.startsWith("SIP/2.0 ") && CSEQ_METHOD.exec(head)?.[1]?.toUpperCase() === "INVITE") {
      // A 2xx establishes the dialogue; a failure before that ends it (a refused re-INVITE does not).
      if (head.startsWith("SIP/2.0 2")) dialogue.established = true;
      else if (FAILURE_STATUS.test(head) && !dialogue.established) dialogue.endedMs ??= now;
    }
    if (dialogue.call !== undefined) this.record(dialogue.call, sipCallId, message);
    else this.hold(dialogue, message);
  }

  private follow(sipCallId: string, now: number): Dialogue {
    if (this.dialogues.size >= MAX_DIALOGUES) {
      // The oldest no call claimed goes first; calls' dialogues only when there is none.
      let victim: string | undefined;
      for (const [id, d] of this.dialogues) {
        if (d.call === undefined) {
          victim = id;
          break;
        }
      }
      const oldest = victim ?? this.dialogues.keys().next().value;
      if (oldest !== undefined) this.forget(oldest);
    }
    const dialogue: Dialogue = {
      sipCallId,
      call: undefined,
      held: [],
      heldBytes: 0,
      heldOmitted: { messages: 0, bytes: 0 },
      lastMs: now,
      endedMs: undefined,
      established: false,
    };
    this.dialogues.set(sipCallId, dialogue);
    return dialogue;
  }

  /** Before a call claims the dialogue: kept in memory within the same bounds as a call's. */
  private hold(dialogue: Dialogue, message: WireMessage): void {
    const size = message.data.length;
    const full =
      dialogue.heldOmitted.messages > 0 ||
      dialogue.held.length >= Math.min(this.options.maxMessages, MAX_HELD_MESSAGES) ||
      dialogue.heldBytes + size > Math.min(this.options.maxBytes, MAX_HELD_DIALOGUE_BYTES) ||
      this.heldBytes + size > MAX_HELD_BYTES ||
      size > MAX_PCAP_PAYLOAD;
    if (full) {
      dialogue.heldOmitted.messages++;
      dialogue.heldOmitted.bytes += size;
      return;
    }
    dialogue.held.push(message);
    dialogue.heldBytes += size;
    this.heldBytes += size;
  }

  private record(call: CallCapture, sipCallId: string, message: WireMessage): void {
    if (call.dead) return;
    const size = message.data.length;
    if (
      call.truncated ||
      call.count >= this.options.maxMessages ||
      call.bytes + size > this.options.maxBytes ||
      size > MAX_PCAP_PAYLOAD
    ) {
      this.omit(call, 1, size);
      return;
    }
    call.count++;
    call.bytes += size;
    call.queued++;
    this.queue.push({ call, seq: call.seq++, sipCallId, message });
    this.schedule();
  }

  private omit(call: CallCapture, messages: number, bytes: number): void {
    if (messages === 0) return;
    if (!call.truncated) {
      call.truncated = true;
      this.options.log.info(
        { callId: call.callId, sipCallId: call.sipCallId, messages: call.count, bytes: call.bytes },
        "SIP capture of the call truncated: its bound is reached, later messages are only counted",
      );
    }
    call.omittedMessages += messages;
    call.omittedBytes += bytes;
    if (!call.dead) this.news.add(call);
    captured.inc({ outcome: "omitted" }, messages);
    this.schedule();
  }

  /**
   * Claims the SIP dialogue `sipCallId` for the call `callId`: its messages
   * so far (held since its INVITE) and from now on are stored as the call's.
   * Called by the SIP carrier when a received INVITE becomes a call, or
   * before it sends a call's INVITE. A call may have several Call-IDs (one
   * capture, one bound); a Call-ID belongs to the first call that claims it.
   */
  attach(callId: string, sipCallId: string): void {
    if (this.closed || sipCallId === "") return;
    let call = this.calls.get(callId);
    if (call === undefined) {
      call = {
        callId,
        sipCallId,
        createTime: this.options.now?.() ?? new Date(),
        seq: 0,
        count: 0,
        bytes: 0,
        truncated: false,
        omittedMessages: 0,
        omittedBytes: 0,
        stored: false,
        dead: false,
        queued: 0,
        dialogues: 0,
      };
      this.calls.set(callId, call);
      this.news.add(call);
      this.schedule();
    }
    const dialogue = this.dialogues.get(sipCallId) ?? this.follow(sipCallId, this.nowMs());
    if (dialogue.call !== undefined) {
      if (dialogue.call !== call) {
        this.options.log.warn(
          { callId, sipCallId, attachedTo: dialogue.call.callId },
          "SIP capture: the Call-ID already belongs to another call",
        );
      }
      return;
    }
    dialogue.call = call;
    call.dialogues++;
    for (const message of dialogue.held) this.record(call, sipCallId, message);
    this.omit(call, dialogue.heldOmitted.messages, dialogue.heldOmitted.bytes);
    this.heldBytes -= dialogue.heldBytes;
    dialogue.held = [];
    dialogue.heldBytes = 0;
    dialogue.heldOmitted = { messages: 0, bytes: 0 };
  }

  private forget(sipCallId: string): void {
    const dialogue = this.dialogues.get(sipCallId);
    if (dialogue === undefined) return;
    this.dialogues.delete(sipCallId);
    this.heldBytes -= dialogue.heldBytes;
    if (dialogue.call !== undefined) {
      dialogue.call.dialogues--;
      this.release(dialogue.call);
    }
  }

  /** Forgets a call no dialogue follows any more once nothing of it waits to be written. */
  private release(call: CallCapture): void {
    if (call.dialogues > 0 || this.calls.get(call.callId) !== call) return;
    const waiting = !call.dead && (!call.stored || call.omittedMessages > 0 || call.queued > 0);
    if (!waiting) this.calls.delete(call.callId);
  }

  /** Drops dialogues past their time; runs at most once a second, from the tap. */
  private sweep(now: number): void {
    this.sweptMs = now;
    for (const [sipCallId, d] of this.dialogues) {
      const expired =
        d.endedMs !== undefined
          ? now - d.endedMs > ENDED_SECONDS * 1000
          : now - d.lastMs > (d.call === undefined ? PENDING_SECONDS : IDLE_SECONDS) * 1000;
      if (expired) this.forget(sipCallId);
    }
  }

  private schedule(delayMs = FLUSH_MS): void {
    if (this.timer !== undefined || this.writing !== undefined || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.writeNext();
    }, delayMs);
    this.timer.unref();
  }

  private pendingWork(): boolean {
    return this.queue.length > 0 || this.news.size > 0;
  }

  /** One batch: capture rows and omitted counts of every call with news, then queued messages. Never rejects. */
  private writeNext(): Promise<void> {
    if (this.writing !== undefined) return this.writing;
    const taken = this.queue.length <= BATCH ? this.queue : this.queue.slice(0, BATCH);
    this.queue = this.queue.length <= BATCH ? [] : this.queue.slice(BATCH);
    const batch = new Set(this.news);
    for (const q of taken) {
      q.call.queued--;
      if (!q.call.dead) batch.add(q.call);
    }
    const calls = [...batch];
    this.writing = this.write(calls, taken)
      .catch((err: unknown) => {
        this.options.log.error({ err }, "SIP capture failed to prepare a batch");
        return false;
      })
      .then((ok) => {
        this.failStreak = ok ? 0 : this.failStreak + 1;
      })
      .finally(() => {
        this.writing = undefined;
        for (const call of calls) this.release(call);
        // After failures, wait longer (the database may be down): up to MAX_BACKOFF_MS.
        if (this.pendingWork()) this.schedule(Math.min(FLUSH_MS * 2 ** this.failStreak, MAX_BACKOFF_MS));
      });
    return this.writing;
  }

  /** Writes a batch; whether it all went in. */
  private async write(calls: CallCapture[], taken: Queued[]): Promise<boolean> {
    const live = calls.filter((c) => !c.dead);
    if (live.length === 0) return true;
    const omitted = new Map(live.map((c) => [c, { messages: c.omittedMessages, bytes: c.omittedBytes }]));
    const upsert = (c: CallCapture): CaptureUpsert => ({
      callId: c.callId,
      sipCallId: c.sipCallId,
      omittedMessages: omitted.get(c)!.messages,
      omittedBytes: omitted.get(c)!.bytes,
      createTime: c.createTime,
    });
    const rows = new Map<CallCapture, NewSipCaptureMessageRow[]>(live.map((c) => [c, []]));
    for (const q of taken) rows.get(q.call)?.push(this.row(q));
    const succeeded = (group: CallCapture[]) => {
      for (const c of group) {
        const o = omitted.get(c)!;
        c.omittedMessages -= o.messages;
        c.omittedBytes -= o.bytes;
        c.stored = true;
        if (c.omittedMessages === 0) this.news.delete(c);
        captured.inc({ outcome: "stored" }, rows.get(c)!.length);
      }
    };
    try {
      await this.options.store.write({
        captures: live.map(upsert),
        messages: live.flatMap((c) => rows.get(c)!),
      });
      succeeded(live);
      return true;
    } catch (err) {
      if (!isMissingCall(err) || live.length === 1) {
        this.failed(live, rows, err);
        return false;
      }
    }
    // A call of the batch is gone (deleted with its project): the others go in one by one.
    let ok = true;
    for (const c of live) {
      try {
        await this.options.store.write({ captures: [upsert(c)], messages: rows.get(c)! });
        succeeded([c]);
      } catch (err) {
        this.failed([c], rows, err);
        ok = false;
      }
    }
    return ok;
  }

  /**
   * A write failed: its messages are lost (logged, counted). A call that no
   * longer exists is given up; otherwise its capture row and omitted counts
   * are tried again with the next batch.
   */
  private failed(
    group: CallCapture[],
    rows: Map<CallCapture, NewSipCaptureMessageRow[]>,
    err: unknown,
  ): void {
    const lost = group.reduce((n, c) => n + (rows.get(c)?.length ?? 0), 0);
    captured.inc({ outcome: "lost" }, lost);
    const missing = isMissingCall(err);
    if (missing) {
      for (const c of group) {
        c.dead = true;
        this.news.delete(c);
      }
    }
    this.options.log.warn(
      { err, calls: group.map((c) => c.callId), lost, givenUp: missing },
      missing ? "SIP capture: the call no longer exists" : "SIP capture could not store messages",
    );
  }

  private row(q: Queued): NewSipCaptureMessageRow {
    const m = q.message;
    const data = redactSipMessage(m.data);
    const head = headOf(data);
    const lineEnd = head.indexOf("\r\n");
    const startLine = Buffer.from(lineEnd < 0 ? head : head.slice(0, lineEnd), "latin1").toString("utf8");
    const method = startLine.startsWith("SIP/")
      ? (CSEQ_METHOD.exec(head)?.[1] ?? "").toUpperCase()
      : startLine.split(" ")[0]!;
    const source = this.address(m.source);
    const destination = this.address(m.destination);
    return {
      callId: q.call.callId,
      seq: q.seq,
      sipCallId: q.sipCallId,
      time: m.time,
      direction: m.direction === "received" ? "RECEIVED" : "SENT",
      transport: m.transport,
      sourceIp: source.address,
      sourcePort: source.port,
      destinationIp: destination.address,
      destinationPort: destination.port,
      method,
      startLine,
      data,
    };
  }

  private address(a: WireAddress): WireAddress {
    const mapped = MAPPED.exec(a.address);
    if (mapped !== null) return { address: mapped[1]!, port: a.port };
    const local = this.options.localAddress;
    if ((a.address === "0.0.0.0" || a.address === "::") && local !== undefined && isIP(local) !== 0) {
      return { address: local, port: a.port };
    }
    return { address: a.address, port: a.port };
  }

  /** Writes everything captured so far (tests, and before closing); one attempt each. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.writing !== undefined) await this.writing;
    do await this.writeNext();
    while (this.queue.length > 0);
  }

  /** Stops capturing; what was captured is written first. */
  async close(): Promise<void> {
    await this.flush().catch(() => {});
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
