/**
 * The SDP offer/answer (RFC 3264) of a G.711 call, through sdp-transform:
 * one audio stream of PCMU (0) or PCMA (8) at 8 kHz, ptime 20, with
 * telephone-event/8000 (RFC 4733) when the peer offers it. The answer picks
 * the first offered codec we support; no common codec means 488. A
 * re-INVITE's offer of sendonly/inactive (or c=0.0.0.0) is a hold, answered
 * recvonly/inactive. The RTP itself is another module's.
 */
import sdpTransform from "sdp-transform";

export type G711 = "PCMU" | "PCMA";

const STATIC_PT: Record<G711, number> = { PCMU: 0, PCMA: 8 };

export type Direction = "sendrecv" | "sendonly" | "recvonly" | "inactive";

/** The audio stream an SDP describes, as far as a G.711 call cares. */
export interface AudioDescription {
  address: string;
  port: number;
  /** Payload types in the peer's order of preference with their encodings (upper-case name/rate). */
  formats: Array<{ payloadType: number; encoding: string }>;
  direction: Direction;
  ptime: number | undefined;
}

/** The SDP cannot be used: 488 Not Acceptable Here. */
export class SdpError extends Error {
  override readonly name = "SdpError";
  readonly status = 488;
}

export interface LocalMedia {
  /** The address RTP is received on (the advertised one behind NAT). */
  address: string;
  port: number;
  /** Codecs we accept, in our order (default PCMU, PCMA). */
  codecs?: G711[];
  /** o= session id and version (version must increase on each new offer/answer of a session). */
  sessionId: number;
  sessionVersion: number;
  direction?: Direction;
}

export function parseAudio(text: string): AudioDescription {
  let sdp: sdpTransform.SessionDescription;
  try {
    sdp = sdpTransform.parse(text);
  } catch {
    throw new SdpError("unparseable SDP");
  }
  const audio = (sdp.media ?? []).find((m) => m.type === "audio" && m.port > 0);
  if (audio === undefined) throw new SdpError("no audio stream");
  const address = audio.connection?.ip ?? sdp.connection?.ip;
  if (address === undefined) throw new SdpError("no connection address");
  const payloads = String(audio.payloads ?? "")
    .split(" ")
    .filter((p) => /^\d{1,3}$/.test(p))
    .map(Number);
  const formats = payloads.map((payloadType) => {
    const rtp = (audio.rtp ?? []).find((r) => r.payload === payloadType);
    const encoding = rtp
      ? `${rtp.codec.toUpperCase()}/${rtp.rate ?? 8000}`
      : payloadType === 0
        ? "PCMU/8000"
        : payloadType === 8
          ? "PCMA/8000"
          : "";
    return { payloadType, encoding };
  });
  const direction: Direction = audio.direction ?? sdp.direction ?? "sendrecv";
  return { address, port: audio.port, formats, direction, ptime: audio.ptime };
}

function write(
  local: LocalMedia,
  formats: Array<{ payloadType: number; encoding: string }>,
  direction: Direction,
): string {
  const rtp = formats.map(({ payloadType, encoding }) => {
    const [codec = "", rate = "8000"] = encoding.split("/");
    return {
      payload: payloadType,
      codec: codec === "TELEPHONE-EVENT" ? "telephone-event" : codec,
      rate: Number(rate),
    };
  });
  const fmtp = formats
    .filter((f) => f.encoding === "TELEPHONE-EVENT/8000")
    .map((f) => ({ payload: f.payloadType, config: "0-16" }));
  return sdpTransform.write({
    version: 0,
    origin: {
      username: "switchboard",
      sessionId: local.sessionId,
      sessionVersion: local.sessionVersion,
      netType: "IN",
      ipVer: local.address.includes(":") ? 6 : 4,
      address: local.address,
    },
    name: "switchboard",
    connection: { version: local.address.includes(":") ? 6 : 4, ip: local.address },
    timing: { start: 0, stop: 0 },
    media: [
      {
        type: "audio",
        port: local.port,
        protocol: "RTP/AVP",
        payloads: formats.map((f) => f.payloadType).join(" "),
        rtp,
        fmtp,
        ptime: 20,
        direction,
      },
    ],
  });
}

/** Our offer: the codecs in our order plus telephone-event (payload type 101). */
export function createOffer(local: LocalMedia): string {
  const codecs = local.codecs ?? ["PCMU", "PCMA"];
  const formats = codecs.map((c) => ({ payloadType: STATIC_PT[c], encoding: `${c}/8000` }));
  formats.push({ payloadType: 101, encoding: "TELEPHONE-EVENT/8000" });
  return write(local, formats, local.direction ?? "sendrecv");
}

export interface Negotiated {
  codec: G711;
  payloadType: number;
  /** The peer's telephone-event payload type, undefined when it offered none. */
  telephoneEvent: number | undefined;
  remote: { address: string; port: number };
  /** The peer put us on hold (sendonly, inactive or c=0.0.0.0). */
  hold: boolean;
}

/** The first common codec of an offer or answer; SdpError (488) when there is none. */
export function negotiate(remote: AudioDescription, codecs: G711[] = ["PCMU", "PCMA"]): Negotiated {
  const chosen = remote.formats.find((f) => codecs.some((c) => f.encoding === `${c}/8000`));
  if (chosen === undefined) throw new SdpError("no common codec");
  const te = remote.formats.find((f) => f.encoding === "TELEPHONE-EVENT/8000");
  return {
    codec: chosen.encoding.split("/")[0] as G711,
    payloadType: chosen.payloadType,
    telephoneEvent: te?.payloadType,
    remote: { address: remote.address, port: remote.port },
    hold: remote.direction === "sendonly" || remote.direction === "inactive" || remote.address === "0.0.0.0",
  };
}

const ANSWER_DIRECTION: Record<Direction, Direction> = {
  sendrecv: "sendrecv",
  sendonly: "recvonly",
  recvonly: "sendonly",
  inactive: "inactive",
};

/** Answers an offer: the chosen codec (and telephone-event when offered) in the offer's payload types. */
export function createAnswer(offer: string, local: LocalMedia): { sdp: string; negotiated: Negotiated } {
  const remote = parseAudio(offer);
  const negotiated = negotiate(remote, local.codecs);
  const formats = [{ payloadType: negotiated.payloadType, encoding: `${negotiated.codec}/8000` }];
  if (negotiated.telephoneEvent !== undefined) {
    formats.push({ payloadType: negotiated.telephoneEvent, encoding: "TELEPHONE-EVENT/8000" });
  }
  const direction = remote.address === "0.0.0.0" ? "inactive" : ANSWER_DIRECTION[remote.direction];
  return { sdp: write(local, formats, local.direction ?? direction), negotiated };
}
