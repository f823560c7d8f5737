/**
 * Splits a SIP byte stream (TCP, TLS) into messages by Content-Length
 * (RFC 3261 §18.3). CRLFs between messages are keep-alives (RFC 5626 §3.5.1:
 * a double CRLF "ping" is answered with a single CRLF "pong"). A header
 * section or message above the size limit, or a message without a
 * Content-Length, is a framing error: the stream cannot be resynchronised, so
 * the caller answers what it can and closes the connection.
 */
import { MAX_MESSAGE_BYTES } from "./message.js";

export type FrameEvent =
  | { type: "message"; data: Buffer }
  | { type: "ping" }
  | { type: "error"; status: 400 | 413; reason: string; head: Buffer };

export class StreamFramer {
  private buffer: Buffer = Buffer.alloc(0);
  private failed = false;

  constructor(private readonly limit = MAX_MESSAGE_BYTES) {}

  /** Feeds bytes; returns the complete events they finish. After an error nothing more is returned. */
  push(chunk: Buffer): FrameEvent[] {
    if (this.failed) return [];
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const events: FrameEvent[] = [];
    for (;;) {
      let crlfs = 0;
      while (this.buffer[crlfs * 2] === 0x0d && this.buffer[crlfs * 2 + 1] === 0x0a) crlfs++;
      if (crlfs > 0) {
        if (crlfs >= 2) events.push({ type: "ping" });
        this.buffer = this.buffer.subarray(crlfs * 2);
      }
      if (this.buffer.length === 0 || (this.buffer.length === 1 && this.buffer[0] === 0x0d)) break;
      const headEnd = this.buffer.indexOf("\r\n\r\n");
      if (headEnd < 0) {
        if (this.buffer.length > this.limit) return this.fail(events, 413, "Message Too Large");
        break;
      }
      const head = this.buffer.subarray(0, headEnd);
      const m = /^(?:content-length|l)[ \t]*:[ \t]*(\S*)[ \t]*$/im.exec(head.toString("latin1"));
      if (m === null) return this.fail(events, 400, "Missing Content-Length");
      if (!/^\d{1,10}$/.test(m[1]!)) return this.fail(events, 400, "Bad Content-Length");
      const total = headEnd + 4 + Number(m[1]);
      if (total > this.limit) return this.fail(events, 413, "Message Too Large");
      if (this.buffer.length < total) break;
      events.push({ type: "message", data: this.buffer.subarray(0, total) });
      this.buffer = this.buffer.subarray(total);
    }
    return events;
  }

  private fail(events: FrameEvent[], status: 400 | 413, reason: string): FrameEvent[] {
    this.failed = true;
    const headEnd = this.buffer.indexOf("\r\n\r\n");
    const head = this.buffer.subarray(
      0,
      headEnd < 0 ? Math.min(this.buffer.length, this.limit) : headEnd + 4,
    );
    this.buffer = Buffer.alloc(0);
    events.push({ type: "error", status, reason, head });
    return events;
  }
}
