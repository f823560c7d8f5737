/**
 * The one error the SIP parsers throw: the message breaks RFC 3261's grammar
 * (or a limit). `status` is the response a request gets for it (400, 413 or
 * 505); the reason names the problem and becomes the response's reason phrase.
 * When the start line was a request and the header lines could be split,
 * `request` holds them so that the endpoint can still answer it.
 */
import type { SipHeaders } from "./message.js";

export class SipParseError extends Error {
  override readonly name = "SipParseError";
  request: { method: string; headers: SipHeaders } | undefined;

  constructor(
    readonly reason: string,
    readonly status = 400,
  ) {
    super(reason);
  }
}
