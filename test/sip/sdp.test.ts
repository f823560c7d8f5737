import { describe, expect, it } from "vitest";
import { createAnswer, createOffer, negotiate, parseAudio, SdpError } from "../../src/sip/sdp.js";

const offer = (formats: string, extra = "", c = "192.0.2.10") =>
  `v=0
o=alice 2890844526 2890844526 IN IP4 192.0.2.10
s=-
c=IN IP4 ${c}
t=0 0
m=audio 49170 RTP/AVP ${formats}
a=rtpmap:0 PCMU/8000
a=rtpmap:8 PCMA/8000
a=rtpmap:18 G729/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-15
a=ptime:20
${extra}`.replace(/\n/g, "\r\n");

const local = { address: "198.51.100.1", port: 40000, sessionId: 1, sessionVersion: 1 };

describe("SDP offer/answer", () => {
  it("answers with the first offered codec we support, keeping telephone-event", () => {
    const { sdp, negotiated } = createAnswer(offer("18 8 0 101"), local);
    expect(negotiated).toEqual({
      codec: "PCMA",
      payloadType: 8,
      telephoneEvent: 101,
      remote: { address: "192.0.2.10", port: 49170 },
      hold: false,
    });
    const answer = parseAudio(sdp);
    expect(answer.formats).toEqual([
      { payloadType: 8, encoding: "PCMA/8000" },
      { payloadType: 101, encoding: "TELEPHONE-EVENT/8000" },
    ]);
    expect([answer.address, answer.port, answer.ptime, answer.direction]).toEqual([
      "198.51.100.1",
      40000,
      20,
      "sendrecv",
    ]);
    expect(sdp).toContain("a=fmtp:101 0-16");
  });

  it("accepts static payload types without rtpmap and no telephone-event", () => {
    const bare =
      "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 5004 RTP/AVP 0\r\n";
    expect(negotiate(parseAudio(bare))).toMatchObject({
      codec: "PCMU",
      payloadType: 0,
      telephoneEvent: undefined,
    });
  });

  it("refuses an offer without a common codec with 488", () => {
    const error = (() => {
      try {
        createAnswer(offer("18 101"), local);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SdpError);
    expect((error as SdpError).status).toBe(488);
    expect(() => parseAudio("not sdp")).toThrow(SdpError);
  });

  it("sees a hold (sendonly, inactive, 0.0.0.0) and answers recvonly/inactive", () => {
    const held = createAnswer(offer("0 101", "a=sendonly\r\n"), local);
    expect(held.negotiated.hold).toBe(true);
    expect(parseAudio(held.sdp).direction).toBe("recvonly");
    expect(parseAudio(createAnswer(offer("0", "a=inactive\r\n"), local).sdp).direction).toBe("inactive");
    expect(createAnswer(offer("0", "", "0.0.0.0"), local).negotiated.hold).toBe(true);
    expect(createAnswer(offer("0", "a=sendrecv\r\n"), local).negotiated.hold).toBe(false);
  });

  it("offers PCMU, PCMA and telephone-event at ptime 20", () => {
    const sdp = createOffer(local);
    expect(sdp).toContain("m=audio 40000 RTP/AVP 0 8 101");
    expect(sdp).toContain("a=rtpmap:101 telephone-event/8000");
    expect(sdp).toContain("a=ptime:20");
    expect(negotiate(parseAudio(sdp), ["PCMA"]).codec).toBe("PCMA");
  });
});
