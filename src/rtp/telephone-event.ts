/**
 * DTMF as data: RFC 4733 telephone-events (payload: event, E bit, R bit,
 * volume, duration) encoded and decoded, and the body of a SIP INFO of
 * type `application/dtmf-relay` (`Signal=5\r\nDuration=160`).
 *
 * Encoding a press (`encodeDtmfPress`): one packet per 20 ms, all with the
 * timestamp of the press's start — the first with the marker bit and a
 * duration of one frame, updates growing by a frame each, then three end
 * packets (E bit) carrying the final duration (§2.5.1.4: the end is sent
 * three times so one lost packet does not lose it).
 *
 * Decoding (`TelephoneEventDecoder`): a press is an (SSRC, timestamp,
 * event) and is reported exactly once — when its first end packet comes,
 * with its final duration and volume. Further packets of a reported press
 * (retransmitted ends, late updates) are ignored. A press whose end never
 * comes is reported when the next press starts or when `expire` finds no
 * packet of it for a while (`ended: false` then, with the longest duration
 * seen).
 */

/** Events 0..15 (RFC 4733 §3.2): the digits, *, #, A–D. */
export const DTMF_EVENTS = "0123456789*#ABCD";

/** A DTMF key as its event code, or undefined for anything else. */
export function dtmfEvent(digit: string): number | undefined {
  const i = DTMF_EVENTS.indexOf(digit.toUpperCase());
  return digit.length === 1 && i >= 0 ? i : undefined;
}

export interface TelephoneEvent {
  /** 0..255 (0..15 are DTMF). */
  event: number;
  end: boolean;
  /** Power level in −dBm0, 0..63. */
  volume: number;
  /** Timestamp units since the event's start, 0..65535. */
  duration: number;
}

/** The first event of a telephone-event payload, or undefined if under 4 bytes. */
export function parseTelephoneEvent(payload: Uint8Array): TelephoneEvent | undefined {
  if (payload.length < 4) return undefined;
  return {
    event: payload[0]!,
    end: (payload[1]! & 0x80) !== 0,
    volume: payload[1]! & 0x3f,
    duration: (payload[2]! << 8) | payload[3]!,
  };
}

/** Writes `ev` as a 4-byte payload at the start of `out` (default: a new buffer). */
export function writeTelephoneEvent(ev: TelephoneEvent, out = new Uint8Array(4)): Uint8Array {
  out[0] = ev.event & 0xff;
  out[1] = (ev.end ? 0x80 : 0) | (ev.volume & 0x3f);
  out[2] = (ev.duration >> 8) & 0xff;
  out[3] = ev.duration & 0xff;
  return out.subarray(0, 4);
}

export interface DtmfPressOptions {
  /** How long the key is pressed (default 100 ms). */
  durationMs?: number;
  /** −dBm0 (default 10). */
  volume?: number;
  /** Packet interval (default 20 ms). */
  frameMs?: number;
  /** RTP clock (default 8000). */
  clockRate?: number;
}

/** One packet of a press: the marker bit and the payload; every packet of a press has its start's timestamp. */
export interface EventPacket {
  marker: boolean;
  payload: Uint8Array;
}

/** The packets of one press of `digit` (RangeError for a key that is not DTMF or a bad duration). */
export function encodeDtmfPress(digit: string, options: DtmfPressOptions = {}): EventPacket[] {
  const event = dtmfEvent(digit);
  if (event === undefined) throw new RangeError(`not a DTMF key: ${JSON.stringify(digit)}`);
  const clockRate = options.clockRate ?? 8000;
  const frame = Math.round(((options.frameMs ?? 20) * clockRate) / 1000);
  const total = Math.round(((options.durationMs ?? 100) * clockRate) / 1000);
  if (!(total >= frame) || total > 0xffff) {
    throw new RangeError(`a press lasts from one frame to ${0xffff} timestamp units, got ${total}`);
  }
  const volume = options.volume ?? 10;
  const packets: EventPacket[] = [];
  for (let duration = frame; duration < total; duration += frame) {
    packets.push({
      marker: packets.length === 0,
      payload: writeTelephoneEvent({ event, end: false, volume, duration }),
    });
  }
  for (let i = 0; i < 3; i++) {
    packets.push({
      marker: packets.length === 0,
      payload: writeTelephoneEvent({ event, end: true, volume, duration: total }),
    });
  }
  return packets;
}

/** A press received. */
export interface DtmfPress {
  digit: string;
  event: number;
  /** −dBm0. */
  volume: number;
  durationMs: number;
  /** The press's RTP timestamp. */
  timestamp: number;
  /** Whether its end packet came (false: reported on the next press or on expiry). */
  ended: boolean;
}

interface Current {
  key: string;
  ssrc: number;
  timestamp: number;
  event: number;
  volume: number;
  duration: number;
  lastMs: number;
}

/** How many reported presses are remembered to ignore their retransmissions. */
const REMEMBERED = 32;

export class TelephoneEventDecoder {
  private current: Current | undefined;
  private readonly reported: string[] = [];
  private readonly unitsPerMs: number;

  constructor(clockRate = 8000) {
    this.unitsPerMs = clockRate / 1000;
  }

  /**
   * A telephone-event packet from `ssrc` with RTP `timestamp`, received at
   * `nowMs`: the presses it completes (usually none or one). Events above
   * 15 (not DTMF) and payloads under 4 bytes are ignored.
   */
  push(ssrc: number, timestamp: number, payload: Uint8Array, nowMs = 0): DtmfPress[] {
    const ev = parseTelephoneEvent(payload);
    if (ev === undefined || ev.event > 15) return [];
    const key = `${ssrc}:${timestamp}:${ev.event}`;
    if (this.reported.includes(key)) return [];
    const out: DtmfPress[] = [];
    if (this.current !== undefined && this.current.key !== key) {
      out.push(this.finish(this.current, false));
      this.current = undefined;
    }
    this.current ??= { key, ssrc, timestamp, event: ev.event, volume: ev.volume, duration: 0, lastMs: nowMs };
    const cur = this.current;
    cur.duration = Math.max(cur.duration, ev.duration);
    cur.volume = ev.volume;
    cur.lastMs = nowMs;
    if (ev.end) {
      out.push(this.finish(cur, true));
      this.current = undefined;
    }
    return out;
  }

  /** Reports a press with no packet for `afterMs` (default 250) at `nowMs`. */
  expire(nowMs: number, afterMs = 250): DtmfPress[] {
    const cur = this.current;
    if (cur === undefined || nowMs - cur.lastMs < afterMs) return [];
    this.current = undefined;
    return [this.finish(cur, false)];
  }

  /** Reports the press under way, if any (at the end of a stream). */
  flush(): DtmfPress[] {
    const cur = this.current;
    this.current = undefined;
    return cur === undefined ? [] : [this.finish(cur, false)];
  }

  private finish(cur: Current, ended: boolean): DtmfPress {
    this.reported.push(cur.key);
    if (this.reported.length > REMEMBERED) this.reported.shift();
    return {
      digit: DTMF_EVENTS[cur.event]!,
      event: cur.event,
      volume: cur.volume,
      durationMs: cur.duration / this.unitsPerMs,
      timestamp: cur.timestamp,
      ended,
    };
  }
}

/** A SIP INFO `application/dtmf-relay` body read. */
export interface DtmfRelay {
  digit: string;
  /** Milliseconds, when the body gives them. */
  durationMs?: number | undefined;
}

/**
 * Reads an `application/dtmf-relay` body: `Signal=<key>` and optionally
 * `Duration=<ms>`, one per line (CRLF or LF), names case-insensitive,
 * blanks around `=` allowed, other lines ignored. The key is 0–9, *, #,
 * A–D (lower case accepted), or 10 and 11 for * and # as some phones send.
 * Anything else is an `{ error }` saying what is wrong.
 */
export function parseDtmfRelay(body: string): DtmfRelay | { error: string } {
  let signal: string | undefined;
  let duration: string | undefined;
  for (const line of body.split(/\r?\n/)) {
    const m = /^\s*([A-Za-z-]+)\s*=\s*(.*?)\s*$/.exec(line);
    if (m === null) continue;
    const name = m[1]!.toLowerCase();
    if (name === "signal") signal = m[2]!;
    else if (name === "duration") duration = m[2]!;
  }
  if (signal === undefined) return { error: "no Signal line" };
  const digit = signal === "10" ? "*" : signal === "11" ? "#" : signal.toUpperCase();
  if (dtmfEvent(digit) === undefined) return { error: `Signal ${JSON.stringify(signal)} is not a DTMF key` };
  if (duration === undefined) return { digit };
  if (!/^\d{1,6}$/.test(duration))
    return { error: `Duration ${JSON.stringify(duration)} is not a number of ms` };
  return { digit, durationMs: Number(duration) };
}
