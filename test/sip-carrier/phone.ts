/**
 * A test softphone on raw sockets: SIP over UDP with literal messages (the
 * UdpUa of ../sip/ua.ts) and an RTP socket of its own that writes and reads
 * RTP headers by hand (never the service's RTP code), for the SipCarrier
 * tests.
 */
import { createHash, randomBytes } from "node:crypto";
import dgram from "node:dgram";
import { type Received, UdpUa } from "../sip/ua.js";

export interface RtpSeen {
  version: number;
  marker: boolean;
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  payload: Buffer;
  from: number;
}

/** µ-law of a sample (G.711, the test's own encoder). */
export function mulaw(sample: number): number {
  const BIAS = 0x84;
  let s = Math.max(-32635, Math.min(32635, sample));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** The sample a µ-law byte stands for. */
export function unmulaw(byte: number): number {
  const u = ~byte & 0xff;
  const t = (((u & 0x0f) << 3) + 0x84) << ((u & 0x70) >> 4);
  return u & 0x80 ? 0x84 - t : t - 0x84;
}

export function digestAnswer(
  challenge: string,
  method: string,
  user: string,
  password: string,
  uri: string,
  nc = "00000001",
): string {
  const param = (k: string) => new RegExp(`${k}="?([^",]+)"?`).exec(challenge)?.[1] ?? "";
  const algorithm = param("algorithm") as "MD5" | "SHA-256";
  const h = (t: string) =>
    createHash(algorithm === "MD5" ? "md5" : "sha256")
      .update(t)
      .digest("hex");
  const realm = param("realm");
  const nonce = param("nonce");
  const cnonce = randomBytes(8).toString("hex");
  const response = h(
    `${h(`${user}:${realm}:${password}`)}:${nonce}:${nc}:${cnonce}:auth:${h(`${method}:${uri}`)}`,
  );
  return `Digest username="${user}", realm="${realm}", nonce="${nonce}", uri="${uri}", response="${response}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}"`;
}

export class Phone {
  readonly rtp: RtpSeen[] = [];
  private cseq = 0;
  readonly callId = `${randomBytes(8).toString("hex")}@phone.test`;
  readonly fromTag = randomBytes(4).toString("hex");
  toTag = "";
  remoteTarget = "";

  private constructor(
    readonly sip: UdpUa,
    readonly media: dgram.Socket,
    readonly serverPort: number,
  ) {
    media.on("message", (data, from) => {
      this.rtp.push({
        version: data[0]! >> 6,
        marker: (data[1]! & 0x80) !== 0,
        payloadType: data[1]! & 0x7f,
        sequence: data.readUInt16BE(2),
        timestamp: data.readUInt32BE(4),
        ssrc: data.readUInt32BE(8),
        payload: data.subarray(12),
        from: from.port,
      });
    });
  }

  static async open(serverPort: number): Promise<Phone> {
    const media = dgram.createSocket("udp4");
    await new Promise<void>((resolve) => media.bind(0, "127.0.0.1", () => resolve()));
    return new Phone(await UdpUa.open(), media, serverPort);
  }

  get rtpPort(): number {
    return this.media.address().port;
  }

  /** An SDP offer of ours (PCMU, PCMA, telephone-event 101 unless `payloads` says otherwise). */
  offer(payloads = "0 8 101", direction = "sendrecv", version = 1): string {
    const lines = [
      "v=0",
      `o=phone 42 ${version} IN IP4 127.0.0.1`,
      "s=phone",
      "c=IN IP4 127.0.0.1",
      "t=0 0",
      `m=audio ${this.rtpPort} RTP/AVP ${payloads}`,
    ];
    for (const pt of payloads.split(" ")) {
      if (pt === "0") lines.push("a=rtpmap:0 PCMU/8000");
      if (pt === "8") lines.push("a=rtpmap:8 PCMA/8000");
      if (pt === "9") lines.push("a=rtpmap:9 G722/8000");
      if (pt === "101") lines.push("a=rtpmap:101 telephone-event/8000", "a=fmtp:101 0-16");
    }
    lines.push("a=ptime:20", `a=${direction}`, "");
    return lines.join("\r\n");
  }

  private send(lines: string[], body = "", contentType = "application/sdp"): string {
    const branch = `z9hG4bK${randomBytes(6).toString("hex")}`;
    const text = [
      ...lines.slice(0, 1),
      `Via: SIP/2.0/UDP 127.0.0.1:${this.sip.port};branch=${branch};rport`,
      ...lines.slice(1),
      ...(body === "" ? [] : [`Content-Type: ${contentType}`]),
      `Content-Length: ${Buffer.byteLength(body)}`,
      "",
      body,
    ].join("\r\n");
    this.sip.send(Buffer.from(text), this.serverPort);
    return branch;
  }

  /** Sends an INVITE to `uri`; returns its branch and CSeq. */
  invite(
    uri: string,
    options: { body?: string; authorization?: string; from?: string; to?: string; headers?: string[] } = {},
  ): { branch: string; cseq: number } {
    const cseq = ++this.cseq;
    const lines = [
      `INVITE ${uri} SIP/2.0`,
      "Max-Forwards: 70",
      `From: <${options.from ?? "sip:alice@127.0.0.1"}>;tag=${this.fromTag}`,
      `To: <${options.to ?? uri}>${this.toTag === "" ? "" : `;tag=${this.toTag}`}`,
      `Call-ID: ${this.callId}`,
      `CSeq: ${cseq} INVITE`,
      `Contact: <sip:alice@127.0.0.1:${this.sip.port}>`,
      "User-Agent: SipCarrier Test Phone",
    ];
    if (options.authorization) lines.push(`Authorization: ${options.authorization}`);
    lines.push(...(options.headers ?? []));
    const branch = this.send(lines, options.body ?? this.offer());
    return { branch, cseq };
  }

  /** A request inside the dialog (ACK with the INVITE's CSeq, BYE, re-INVITE). */
  inDialog(
    method: string,
    uri: string,
    options: { cseq?: number; body?: string; contentType?: string } = {},
  ): { branch: string; cseq: number } {
    const cseq = options.cseq ?? ++this.cseq;
    const branch = this.send(
      [
        `${method} ${this.remoteTarget || uri} SIP/2.0`,
        "Max-Forwards: 70",
        `From: <sip:alice@127.0.0.1>;tag=${this.fromTag}`,
        `To: <${uri}>;tag=${this.toTag}`,
        `Call-ID: ${this.callId}`,
        `CSeq: ${cseq} ${method}`,
        `Contact: <sip:alice@127.0.0.1:${this.sip.port}>`,
      ],
      options.body ?? "",
      options.contentType,
    );
    return { branch, cseq };
  }

  /** CANCEL of the INVITE sent with `branch` and `cseq` (same Via branch, RFC 3261 §9.1). */
  cancel(uri: string, branch: string, cseq: number): void {
    const text = [
      `CANCEL ${uri} SIP/2.0`,
      `Via: SIP/2.0/UDP 127.0.0.1:${this.sip.port};branch=${branch};rport`,
      "Max-Forwards: 70",
      `From: <sip:alice@127.0.0.1>;tag=${this.fromTag}`,
      `To: <${uri}>`,
      `Call-ID: ${this.callId}`,
      `CSeq: ${cseq} CANCEL`,
      "Content-Length: 0",
      "",
      "",
    ].join("\r\n");
    this.sip.send(Buffer.from(text), this.serverPort);
  }

  /** Learns the To tag and Contact of a 2xx / provisional response. */
  learn(response: Received): void {
    this.toTag = /;tag=([^;>\s]+)/.exec(response.header("To") ?? "")?.[1] ?? this.toTag;
    const contact = /<([^>]+)>/.exec(response.header("Contact") ?? "")?.[1];
    if (contact) this.remoteTarget = contact;
  }

  /** Answers a request from the server (BYE) 200, echoing its headers. */
  ok(request: Received): void {
    const lines = [
      "SIP/2.0 200 OK",
      ...request.headers("Via").map((v) => `Via: ${v}`),
      `From: ${request.header("From")}`,
      `To: ${request.header("To")}`,
      `Call-ID: ${request.header("Call-ID")}`,
      `CSeq: ${request.header("CSeq")}`,
      "Content-Length: 0",
      "",
      "",
    ];
    this.sip.send(Buffer.from(lines.join("\r\n")), this.serverPort);
  }

  /** Where the server's SDP says RTP goes. */
  static mediaPort(sdp: string): number {
    return Number(/^m=audio (\d+) /m.exec(sdp)?.[1] ?? 0);
  }

  /** Sends µ-law RTP packets of `samples` (160 a packet) to `port`, one every 20 ms. */
  async sendAudio(port: number, samples: Int16Array, pt = 0): Promise<void> {
    const ssrc = 0x1234abcd;
    const start = Date.now();
    for (let i = 0, seq = 100; i < samples.length; i += 160, seq++) {
      const payload = Buffer.from(Array.from(samples.subarray(i, i + 160), mulaw));
      const header = Buffer.alloc(12);
      header[0] = 0x80;
      header[1] = (i === 0 ? 0x80 : 0) | pt;
      header.writeUInt16BE(seq, 2);
      header.writeUInt32BE(5000 + i, 4);
      header.writeUInt32BE(ssrc, 8);
      this.media.send(Buffer.concat([header, payload]), port, "127.0.0.1");
      // Paced on a fixed schedule (packet k at start + 20 k ms), as a phone's audio clock does.
      await new Promise((r) => setTimeout(r, Math.max(0, start + (i + 160) / 8 - Date.now())));
    }
  }

  /** One key as RFC 4733 packets: a start (marker), then the end three times, one timestamp. */
  sendDigit(port: number, key: string, timestamp: number, seq: number): void {
    const event = "0123456789*#".indexOf(key);
    for (let i = 0; i < 4; i++) {
      const packet = Buffer.alloc(16);
      packet[0] = 0x80;
      packet[1] = (i === 0 ? 0x80 : 0) | 101;
      packet.writeUInt16BE(seq + i, 2);
      packet.writeUInt32BE(timestamp, 4);
      packet.writeUInt32BE(0x1234abcd, 8);
      packet[12] = event;
      packet[13] = (i === 0 ? 0 : 0x80) | 10;
      packet.writeUInt16BE(800, 14);
      this.media.send(packet, port, "127.0.0.1");
    }
  }

  close(): void {
    this.sip.close();
    this.media.close();
  }
}

/**
 * Where `encoded` (G.711 bytes of what was said) starts in the packets'
 * payloads: the session sends silence (`silenceByte`: 0xff μ-law, 0xd5
 * A-law) whenever nothing is queued, so what was said is one run, starting
 * on a packet boundary, with nothing but silence before it and after it
 * (the last packet's tail padded with silence). Throws when not so.
 */
export function spokenRun(packets: RtpSeen[], encoded: Buffer, silenceByte: number): number {
  const all = Buffer.concat(packets.map((p) => p.payload));
  const at = all.indexOf(encoded);
  if (at < 0) throw new Error("what was said is not in the packets, in one piece");
  if (at % 160 !== 0) throw new Error(`what was said starts at byte ${at}, not on a packet boundary`);
  const outside = [...all.subarray(0, at), ...all.subarray(at + encoded.length)];
  if (outside.some((b) => b !== silenceByte))
    throw new Error("something other than silence was sent around it");
  return at / 160;
}
