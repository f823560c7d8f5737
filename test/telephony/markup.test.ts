import { describe, expect, it } from "vitest";
import {
  type Action,
  MARKUP_LIMITS,
  MarkupErrorCode,
  type MarkupResult,
  parseVoiceMl,
  resolveUri,
  UNSUPPORTED_ACTION,
} from "../../src/telephony/markup/index.js";

const ENDPOINT = "<Endpoint>+61255501234</Endpoint>";
const ERROR_CODES = new Set<string>(Object.values(MarkupErrorCode));

function parse(body: string, contentType?: string): MarkupResult {
  return contentType === undefined ? parseVoiceMl(body) : parseVoiceMl(body, contentType);
}

function actions(body: string, contentType?: string): readonly Action[] {
  const result = parse(body, contentType);
  if (!result.ok) throw new Error(`expected ok, got ${result.errorCode}: ${result.errorMessage}`);
  return result.actions;
}

/** The single action of `<Response>${xml}</Response>`. */
function one(xml: string): Action {
  const list = actions(`<Response>${xml}</Response>`);
  expect(list).toHaveLength(1);
  return list[0]!;
}

function failure(body: string, code: string, contentType?: string) {
  const result = parse(body, contentType);
  if (result.ok) throw new Error(`expected ${code}, got ok: ${JSON.stringify(result.actions)}`);
  expect(result.errorCode, result.errorMessage).toBe(code);
  expect(result.errorMessage.length).toBeGreaterThan(0);
  return result;
}

/** A minimal valid instance of each element, for attribute tests. */
function element(name: string, attrs: string): string {
  switch (name) {
    case "Call":
      return `<Call ${attrs}>${ENDPOINT}</Call>`;
    case "Say":
      return `<Say ${attrs}>Hello</Say>`;
    default:
      return `<${name} ${attrs}/>`;
  }
}

describe("parseVoiceMl", () => {
  describe("integer attributes: defaults and bounds", () => {
    const cases = [
      { el: "Record", attr: "MaxDurationSeconds", field: "maxDurationSeconds", min: 1, max: 3600, def: 600 },
      { el: "Record", attr: "TimeoutSeconds", field: "timeoutSeconds", min: 1, max: 30, def: 5 },
      { el: "Call", attr: "TimeoutSeconds", field: "timeoutSeconds", min: 1, max: 600, def: 30 },
      {
        el: "Call",
        attr: "MaxDurationSeconds",
        field: "maxDurationSeconds",
        min: 1,
        max: 86_400,
        def: 14_400,
      },
      { el: "Wait", attr: "Seconds", field: "seconds", min: 1, max: 600, def: 1 },
      { el: "Input", attr: "TimeoutSeconds", field: "timeoutSeconds", min: 1, max: 60, def: 5 },
      { el: "Input", attr: "NumDigits", field: "numDigits", min: 1, max: 32, def: undefined },
    ] as const;

    for (const c of cases) {
      describe(`${c.el} ${c.attr}`, () => {
        it(`defaults to ${String(c.def)}`, () => {
          const action = one(element(c.el, "")) as unknown as Record<string, unknown>;
          expect(action[c.field]).toBe(c.def);
          if (c.def === undefined) expect(c.field in action).toBe(false);
        });

        it.each([c.min, c.max])(`accepts the edge value %s`, (v) => {
          const action = one(element(c.el, `${c.attr}="${v}"`)) as unknown as Record<string, unknown>;
          expect(action[c.field]).toBe(v);
        });

        it("accepts the name in any case and surrounding whitespace in the value", () => {
          const action = one(element(c.el, `${c.attr.toLowerCase()}=" ${c.max} "`)) as unknown as Record<
            string,
            unknown
          >;
          expect(action[c.field]).toBe(c.max);
        });

        it.each([
          String(c.min - 1),
          String(c.max + 1),
          "1.5",
          "abc",
          "",
          "-1",
          "1e2",
          "0x10",
          "+5",
          "99999999999",
        ])(`rejects %j with MARKUP_INVALID_ATTRIBUTE naming ${c.attr}`, (v) => {
          const result = failure(
            `<Response>${element(c.el, `${c.attr}="${v}"`)}</Response>`,
            "MARKUP_INVALID_ATTRIBUTE",
          );
          expect(result.attribute).toBe(c.attr);
          expect(result.element).toBe(c.el);
          expect(result.errorMessage).toContain(c.attr);
          expect(result.errorMessage).toContain(`<${c.el}>`);
          expect(result.errorMessage).toContain(`from ${c.min} to ${c.max}`);
        });
      });
    }
  });

  describe("enum attributes", () => {
    const cases = [
      {
        el: "Call",
        attr: "Strategy",
        field: "strategy",
        values: ["linear", "simultaneous", "failover"],
        def: "linear",
      },
      { el: "RecordCall", attr: "Trigger", field: "trigger", values: ["answer", "bridge"], def: "answer" },
      { el: "Reject", attr: "Reason", field: "reason", values: ["busy", "rejected"], def: "rejected" },
    ] as const;

    for (const c of cases) {
      it(`${c.el} ${c.attr} defaults to ${c.def}`, () => {
        expect((one(element(c.el, "")) as unknown as Record<string, unknown>)[c.field]).toBe(c.def);
      });

      it.each(c.values)(`${c.el} ${c.attr} accepts %s in any case`, (v) => {
        for (const written of [v, v.toUpperCase()]) {
          const action = one(element(c.el, `${c.attr}="${written}"`)) as unknown as Record<string, unknown>;
          expect(action[c.field]).toBe(v);
        }
      });

      it(`${c.el} ${c.attr} rejects an unknown value`, () => {
        const result = failure(
          `<Response>${element(c.el, `${c.attr}="round-robin"`)}</Response>`,
          "MARKUP_INVALID_ATTRIBUTE",
        );
        expect(result.attribute).toBe(c.attr);
        for (const v of c.values) expect(result.errorMessage).toContain(v);
      });
    }

    it.each(["Record", "RecordCall"])("%s PostProcessing: default empty, trim-silence accepted", (el) => {
      expect(one(element(el, ""))).toMatchObject({ postProcessing: [] });
      expect(one(element(el, 'PostProcessing="trim-silence"'))).toMatchObject({
        postProcessing: ["trim-silence"],
      });
      expect(one(element(el, 'postprocessing="TRIM-SILENCE"'))).toMatchObject({
        postProcessing: ["trim-silence"],
      });
      const result = failure(
        `<Response>${element(el, 'PostProcessing="normalize"')}</Response>`,
        "MARKUP_INVALID_ATTRIBUTE",
      );
      expect(result.attribute).toBe("PostProcessing");
    });
  });

  describe("boolean, key, caller id and URI attributes", () => {
    it.each([
      ["true", true],
      ["false", false],
      ["TRUE", true],
      ["False", false],
    ])("Record PlayBeep=%j -> %s (default true)", (v, expected) => {
      expect(one("<Record/>")).toMatchObject({ playBeep: true });
      expect(one(`<Record PlayBeep="${v}"/>`)).toMatchObject({ playBeep: expected });
    });

    it.each(["yes", "1", "", "on"])("Record PlayBeep=%j is rejected", (v) => {
      expect(
        failure(`<Response><Record PlayBeep="${v}"/></Response>`, "MARKUP_INVALID_ATTRIBUTE").attribute,
      ).toBe("PlayBeep");
    });

    it.each(["0", "5", "9", "*", "#"])("Record StopKey=%j is accepted (absent by default)", (k) => {
      expect(one("<Record/>")).not.toHaveProperty("stopKey");
      expect(one(`<Record StopKey="${k}"/>`)).toMatchObject({ stopKey: k });
    });

    it.each(["10", "a", "", "##", "+"])("Record StopKey=%j is rejected", (k) => {
      expect(
        failure(`<Response><Record StopKey="${k}"/></Response>`, "MARKUP_INVALID_ATTRIBUTE").attribute,
      ).toBe("StopKey");
    });

    it("Input FinishOnKey: default #, a key, or empty for none", () => {
      expect(one("<Input/>")).toMatchObject({ finishOnKey: "#" });
      expect(one('<Input FinishOnKey="*"/>')).toMatchObject({ finishOnKey: "*" });
      expect(one('<Input finishOnKey=""/>')).toMatchObject({ finishOnKey: null });
      expect(
        failure('<Response><Input FinishOnKey="**"/></Response>', "MARKUP_INVALID_ATTRIBUTE").attribute,
      ).toBe("FinishOnKey");
    });

    it.each(["+61255501234", "+12", "+123456789012345"])("Call CallerId=%j is accepted", (id) => {
      expect(one(element("Call", `CallerId="${id}"`))).toMatchObject({ callerId: id });
    });

    it.each(["0255501234", "61255501234", "+0255501234", "+1", "+1234567890123456", "+61 2 5550 1234", ""])(
      "Call CallerId=%j is rejected",
      (id) => {
        expect(
          failure(`<Response>${element("Call", `CallerId="${id}"`)}</Response>`, "MARKUP_INVALID_ATTRIBUTE")
            .attribute,
        ).toBe("CallerId");
      },
    );

    const uriAttributes = [
      ["Record", "NextUri", "nextUri"],
      ["Record", "RecordingReadyUri", "recordingReadyUri"],
      ["RecordCall", "RecordingReadyUri", "recordingReadyUri"],
      ["Call", "NextUri", "nextUri"],
      ["Input", "NextUri", "nextUri"],
    ] as const;
    const goodUris = [
      "https://handler.example/voice/next?step=2&amp;x=1",
      "http://handler.example",
      "HTTPS://handler.example:8443/a",
      "/voice/next",
      "next?digits=1",
      "../up",
      "?step=3",
      "//cdn.example/next",
    ];
    const badUris = [
      "ftp://handler.example/x",
      "javascript:alert(1)",
      "file:///etc/passwd",
      "https://",
      "https://handler.example/a b",
      "http:\\\\evil.example",
      "",
      `https://handler.example/${"a".repeat(MARKUP_LIMITS.maxUriLength)}`,
    ];

    for (const [el, attr, field] of uriAttributes) {
      it.each(goodUris)(`${el} ${attr}=%j is accepted unresolved`, (uri) => {
        const action = one(element(el, `${attr}="${uri}"`)) as unknown as Record<string, unknown>;
        expect(action[field]).toBe(uri.replace("&amp;", "&"));
      });

      it.each(badUris)(`${el} ${attr}=%j is rejected`, (uri) => {
        const result = failure(
          `<Response>${element(el, `${attr}="${uri}"`)}</Response>`,
          "MARKUP_INVALID_ATTRIBUTE",
        );
        expect(result.attribute).toBe(attr);
      });
    }

    it.each(["NextUri", "nextUri", "nexturi", "NEXTURI"])(
      "attribute names are case-insensitive: %s",
      (name) => {
        expect(one(`<Record ${name}="/done"/>`)).toMatchObject({ nextUri: "/done" });
      },
    );

    it("rejects the same attribute twice in different cases", () => {
      const result = failure(
        '<Response><Record NextUri="/a" nexturi="/b"/></Response>',
        "MARKUP_INVALID_ATTRIBUTE",
      );
      expect(result.errorMessage).toContain("more than once");
    });

    it("ignores unknown attributes (forward compatibility)", () => {
      expect(one('<Say Loop="3" xmlns:x="urn:x" x:foo="bar">Hi</Say>')).toEqual({ kind: "say", text: "Hi" });
      expect(one('<Wait Seconds="2" Length="9"/>')).toEqual({ kind: "wait", seconds: 2 });
    });

    it("bounds the size of error messages", () => {
      const result = failure(
        `<Response><Record MaxDurationSeconds="${"9".repeat(10_000)}"/></Response>`,
        "MARKUP_INVALID_ATTRIBUTE",
      );
      expect(result.errorMessage.length).toBeLessThan(300);
    });
  });

  describe("actions", () => {
    it("Say: trimmed text, optional Voice and Language", () => {
      expect(one("<Say>  Hello there  </Say>")).toEqual({ kind: "say", text: "Hello there" });
      expect(one('<Say Voice="en-AU-Wavenet-A" Language="en-AU">Hi</Say>')).toEqual({
        kind: "say",
        text: "Hi",
        voice: "en-AU-Wavenet-A",
        language: "en-AU",
      });
    });

    it("Say: text length 1..4000", () => {
      const max = "a".repeat(MARKUP_LIMITS.maxSayLength);
      expect(one(`<Say>${max}</Say>`)).toMatchObject({ text: max });
      failure(`<Response><Say>${max}a</Say></Response>`, "MARKUP_INVALID_CONTENT");
      failure("<Response><Say/></Response>", "MARKUP_INVALID_CONTENT");
      failure("<Response><Say>   </Say></Response>", "MARKUP_INVALID_CONTENT");
    });

    it.each([
      ['Language="english!"', "Language"],
      ['Language="e"', "Language"],
      ['Voice=""', "Voice"],
      ['Voice="a b"', "Voice"],
    ])("Say: %s is rejected", (attrs, attribute) => {
      expect(
        failure(`<Response><Say ${attrs}>Hi</Say></Response>`, "MARKUP_INVALID_ATTRIBUTE").attribute,
      ).toBe(attribute);
    });

    it("Say: entities, character references and CDATA", () => {
      expect(
        one("<Say>Fish &amp; chips &lt;today&gt; &quot;now&quot; &apos;ok&apos; &#65;&#x42;&#x1F600;</Say>"),
      ).toEqual({ kind: "say", text: "Fish & chips <today> \"now\" 'ok' AB😀" });
      expect(one("<Say><![CDATA[Tom & Jerry <3 &amp;]]></Say>")).toEqual({
        kind: "say",
        text: "Tom & Jerry <3 &amp;",
      });
      expect(one("<Say>Part one, <![CDATA[<two>]]> and three</Say>")).toEqual({
        kind: "say",
        text: "Part one, <two> and three",
      });
      expect(one("<Say><![CDATA[<!DOCTYPE is just text here]]></Say>")).toMatchObject({ kind: "say" });
    });

    it("Say: SSML or other elements inside are rejected", () => {
      failure("<Response><Say>Hi <break/> there</Say></Response>", "MARKUP_INVALID_NESTING");
    });

    it.each([
      ["Play", "url"],
      ["Redirect", "uri"],
    ])("%s: URL text content, absolute or relative", (el, field) => {
      expect(one(`<${el}>https://media.example/a.wav</${el}>`)).toEqual({
        kind: el.toLowerCase(),
        [field]: "https://media.example/a.wav",
      });
      expect(one(`<${el}>\n  /relative/next?x=1\n</${el}>`)).toMatchObject({ [field]: "/relative/next?x=1" });
      expect(one(`<${el}><![CDATA[https://h.example/a?b=1&c=2]]></${el}>`)).toMatchObject({
        [field]: "https://h.example/a?b=1&c=2",
      });
      for (const bad of ["", "  ", "ftp://x.example/a", "javascript:alert(1)", "a b"]) {
        const result = failure(`<Response><${el}>${bad}</${el}></Response>`, "MARKUP_INVALID_CONTENT");
        expect(result.element).toBe(el);
      }
      failure(`<Response><${el}><Say>x</Say></${el}></Response>`, "MARKUP_INVALID_NESTING");
    });

    it("Wait: no content allowed", () => {
      failure("<Response><Wait>5</Wait></Response>", "MARKUP_INVALID_CONTENT");
      failure("<Response><Wait><Say>x</Say></Wait></Response>", "MARKUP_INVALID_NESTING");
    });

    it("Input: defaults and Say / Play / Wait prompts in order", () => {
      expect(one("<Input/>")).toEqual({ kind: "input", timeoutSeconds: 5, finishOnKey: "#", prompts: [] });
      expect(
        one(`<Input NumDigits="4" TimeoutSeconds="10" FinishOnKey="*" NextUri="/pin">
               <Say>Enter your PIN</Say><Wait Seconds="2"/><Play>/beep.wav</Play>
             </Input>`),
      ).toEqual({
        kind: "input",
        numDigits: 4,
        timeoutSeconds: 10,
        finishOnKey: "*",
        nextUri: "/pin",
        prompts: [
          { kind: "say", text: "Enter your PIN" },
          { kind: "wait", seconds: 2 },
          { kind: "play", url: "/beep.wav" },
        ],
      });
    });

    it.each(["<Call><Endpoint>+61255501234</Endpoint></Call>", "<Input/>", "<Record/>", "<Foo/>"])(
      "Input: %s inside Input is rejected",
      (inner) => {
        expect(
          failure(`<Response><Input>${inner}</Input></Response>`, "MARKUP_INVALID_NESTING").element,
        ).toBe("Input");
      },
    );

    it("Input: invalid prompts are reported as such", () => {
      failure('<Response><Input><Wait Seconds="0"/></Input></Response>', "MARKUP_INVALID_ATTRIBUTE");
    });

    it("Redirect and Reject", () => {
      expect(one("<Reject/>")).toEqual({ kind: "reject", reason: "rejected" });
      expect(one('<Reject Reason="busy"/>')).toEqual({ kind: "reject", reason: "busy" });
    });

    it("Record: all defaults", () => {
      expect(one("<Record/>")).toEqual({
        kind: "record",
        maxDurationSeconds: 600,
        timeoutSeconds: 5,
        playBeep: true,
        postProcessing: [],
      });
    });

    it("Record: every attribute", () => {
      expect(
        one(
          '<Record MaxDurationSeconds="120" TimeoutSeconds="3" StopKey="#" PlayBeep="false" PostProcessing="trim-silence" RecordingReadyUri="https://h.example/ready" NextUri="/after"/>',
        ),
      ).toEqual({
        kind: "record",
        maxDurationSeconds: 120,
        timeoutSeconds: 3,
        stopKey: "#",
        playBeep: false,
        postProcessing: ["trim-silence"],
        recordingReadyUri: "https://h.example/ready",
        nextUri: "/after",
      });
    });

    it("RecordCall: defaults and attributes", () => {
      expect(one("<RecordCall/>")).toEqual({ kind: "recordCall", trigger: "answer", postProcessing: [] });
      expect(one('<RecordCall Trigger="bridge" RecordingReadyUri="/ready"/>')).toEqual({
        kind: "recordCall",
        trigger: "bridge",
        postProcessing: [],
        recordingReadyUri: "/ready",
      });
    });

    it.each([
      ["Label", "label"],
      ["ReceiveFax", "receiveFax"],
    ])("%s parses as a known but unsupported action", (el, kind) => {
      for (const written of [el, el.toLowerCase()]) {
        expect(one(`<${written} Name="x" Url="wss://s.example"><Parameter a="1"/></${written}>`)).toEqual({
          kind,
          unsupported: true,
          element: el,
          attributes: { name: "x", url: "wss://s.example" },
        });
      }
      expect(UNSUPPORTED_ACTION).toBe("UNSUPPORTED_ACTION");
    });
  });

  describe("Stream", () => {
    it("takes a stream id or a full stream name, TimeoutSeconds and NextUri", () => {
      expect(one('<Stream Name="bot-1"/>')).toEqual({ kind: "stream", name: "bot-1", timeoutSeconds: 10 });
      expect(
        one(`<stream name=" projects/p1/streams/${"a".repeat(36)} " timeoutseconds="0" nexturi="/n"/>`),
      ).toEqual({
        kind: "stream",
        name: `projects/p1/streams/${"a".repeat(36)}`,
        timeoutSeconds: 0,
        nextUri: "/n",
      });
      expect(one('<Stream Name="x" TimeoutSeconds="30" Url="ignored"/>')).toMatchObject({
        timeoutSeconds: 30,
      });
    });

    it.each([
      ["<Stream/>", "Name"],
      ['<Stream Name=""/>', "Name"],
      [`<Stream Name="${"a".repeat(37)}"/>`, "Name"],
      ['<Stream Name="a b"/>', "Name"],
      ['<Stream Name="projects/p/calls/x"/>', "Name"],
      ['<Stream Name="x" TimeoutSeconds="31"/>', "TimeoutSeconds"],
      ['<Stream Name="x" NextUri="ftp://x"/>', "NextUri"],
    ])("%s is MARKUP_INVALID_ATTRIBUTE naming %s", (doc, attribute) => {
      const result = parseVoiceMl(`<Response>${doc}</Response>`);
      expect(result).toMatchObject({
        ok: false,
        errorCode: "MARKUP_INVALID_ATTRIBUTE",
        element: "Stream",
        attribute,
      });
    });

    it("must be empty", () => {
      failure('<Response><Stream Name="x">text</Stream></Response>', "MARKUP_INVALID_CONTENT");
      failure('<Response><Stream Name="x"><Parameter/></Stream></Response>', "MARKUP_INVALID_NESTING");
    });
  });

  describe("Call and Endpoint", () => {
    it("defaults", () => {
      expect(one(`<Call>${ENDPOINT}</Call>`)).toEqual({
        kind: "call",
        endpoints: [{ type: "phone", phoneNumber: "+61255501234" }],
        strategy: "linear",
        timeoutSeconds: 30,
        maxDurationSeconds: 14_400,
      });
    });

    it("every attribute, endpoints in order", () => {
      expect(
        one(`<Call Strategy="failover" TimeoutSeconds="20" MaxDurationSeconds="3600" CallerId="+61255501234" NextUri="/after">
               <Endpoint>+61255509999</Endpoint>
               <endpoint> sip:alice@pbx.example;transport=tls </endpoint>
               <ENDPOINT>tel:+1-201-555-0123</ENDPOINT>
               <Endpoint>sips:bob@pbx.example:5061</Endpoint>
             </Call>`),
      ).toEqual({
        kind: "call",
        endpoints: [
          { type: "phone", phoneNumber: "+61255509999" },
          { type: "sip", uri: "sip:alice@pbx.example;transport=tls" },
          { type: "phone", phoneNumber: "+12015550123" },
          { type: "sip", uri: "sips:bob@pbx.example:5061" },
        ],
        strategy: "failover",
        timeoutSeconds: 20,
        maxDurationSeconds: 3600,
        callerId: "+61255501234",
        nextUri: "/after",
      });
    });

    it(`accepts ${MARKUP_LIMITS.maxEndpoints} endpoints and rejects one more`, () => {
      const max = ENDPOINT.repeat(MARKUP_LIMITS.maxEndpoints);
      expect(one(`<Call>${max}</Call>`)).toMatchObject({ kind: "call" });
      failure(`<Response><Call>${max}${ENDPOINT}</Call></Response>`, "MARKUP_INVALID_NESTING");
    });

    it.each([
      ["<Call/>", "MARKUP_INVALID_NESTING"],
      ["<Call>   </Call>", "MARKUP_INVALID_NESTING"],
      [`<Call>${ENDPOINT}<Say>hi</Say></Call>`, "MARKUP_INVALID_NESTING"],
      [`<Call><Call>${ENDPOINT}</Call></Call>`, "MARKUP_INVALID_NESTING"],
      [`<Call>+61255501234</Call>`, "MARKUP_INVALID_CONTENT"],
      [`<Call>text ${ENDPOINT}</Call>`, "MARKUP_INVALID_CONTENT"],
      [ENDPOINT, "MARKUP_INVALID_NESTING"],
      ["<Call><Endpoint><Endpoint>+61255501234</Endpoint></Endpoint></Call>", "MARKUP_INVALID_NESTING"],
    ])("%s -> %s", (xml, code) => {
      failure(`<Response>${xml}</Response>`, code);
    });

    it.each([
      "",
      "0255501234",
      "+0255501234",
      "+1234567890123456",
      "tel:0255501234",
      "tel:+0",
      "sip:",
      "sip:@",
      "sip:alice@",
      "mailto:alice@example.com",
      "alice@example.com",
      "https://example.com",
    ])("Endpoint %j is rejected", (text) => {
      expect(
        failure(`<Response><Call><Endpoint>${text}</Endpoint></Call></Response>`, "MARKUP_INVALID_CONTENT")
          .element,
      ).toBe("Endpoint");
    });
  });

  describe("document structure", () => {
    it.each([
      "<Response/>",
      "<Response></Response>",
      "<Response>\n  <!-- nothing to do -->\n</Response>",
      "<response/>",
    ])("%j is an empty program (hang up)", (doc) => {
      expect(actions(doc)).toEqual([]);
    });

    it("element names in either case", () => {
      const expected = [
        { kind: "say", text: "hi" },
        { kind: "wait", seconds: 2 },
      ];
      expect(actions('<Response><Say>hi</Say><Wait Seconds="2"/></Response>')).toEqual(expected);
      expect(actions('<response><say>hi</say><wait seconds="2"/></response>')).toEqual(expected);
      expect(actions('<RESPONSE><SAY>hi</SAY><WAIT SECONDS="2"/></RESPONSE>')).toEqual(expected);
      expect(actions('<Response><sAy>hi</sAy><wAiT sEcOnDs="2"/></Response>')).toEqual(expected);
    });

    it("XML declaration, BOM, comments, processing instructions, CRLF and indentation", () => {
      const doc = [
        '\uFEFF<?xml version="1.0" encoding="UTF-8"?>',
        "<!-- generated -->",
        '<?app something="1"?>',
        "<Response>",
        "  <!-- greet -->",
        "  <Say>",
        "    Welcome",
        "  </Say>",
        '  <Record MaxDurationSeconds="30"',
        '          NextUri="/done"/>',
        "</Response>",
        "<!-- trailing comment -->",
        "",
      ].join("\r\n");
      expect(actions(doc)).toEqual([
        { kind: "say", text: "Welcome" },
        {
          kind: "record",
          maxDurationSeconds: 30,
          timeoutSeconds: 5,
          playBeep: true,
          postProcessing: [],
          nextUri: "/done",
        },
      ]);
    });

    it("a program with every supported action keeps document order", () => {
      const list = actions(`<Response>
        <RecordCall/><Say>a</Say><Play>/a.wav</Play><Wait/><Input/><Call>${ENDPOINT}</Call>
        <Record/><Redirect>/next</Redirect><Reject/>
      </Response>`);
      expect(list.map((a) => a.kind)).toEqual([
        "recordCall",
        "say",
        "play",
        "wait",
        "input",
        "call",
        "record",
        "redirect",
        "reject",
      ]);
    });

    it.each([
      ["<Response><Dial>+61255501234</Dial></Response>", "Dial"],
      ["<Response><Say>a</Say><Gather/></Response>", "Gather"],
      ["<Response><x:Say xmlns:x='urn:x'>a</x:Say></Response>", "x:Say"],
    ])("unknown action in %s is named", (doc, name) => {
      const result = failure(doc, "MARKUP_UNKNOWN_ACTION");
      expect(result.errorMessage).toContain(`<${name}>`);
      expect(result.element).toBe(name);
    });

    it.each([
      ["<Say>hi</Say>", "Say"],
      ["<Responses/>", "Responses"],
      ["<Root><Response/></Root>", "Root"],
      [
        "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>",
        "html",
      ],
    ])("wrong root %j -> MARKUP_NO_RESPONSE_ROOT", (doc, root) => {
      expect(failure(doc, "MARKUP_NO_RESPONSE_ROOT").errorMessage).toContain(`<${root}>`);
    });

    it("bounds element names in messages", () => {
      const long = "a".repeat(50_000);
      expect(failure(`<${long}/>`, "MARKUP_NO_RESPONSE_ROOT").errorMessage.length).toBeLessThan(200);
      expect(
        failure(`<Response><${long}/></Response>`, "MARKUP_UNKNOWN_ACTION").errorMessage.length,
      ).toBeLessThan(300);
      expect(
        failure(`<Response><Say><${long}/></Say></Response>`, "MARKUP_INVALID_NESTING").errorMessage.length,
      ).toBeLessThan(200);
    });

    it("text directly inside Response is rejected", () => {
      failure("<Response>Hello<Say>x</Say></Response>", "MARKUP_INVALID_CONTENT");
    });
  });

  describe("not XML", () => {
    it.each([
      ["empty", ""],
      ["blank", "  \n\t "],
      ["plain text", "Hello world"],
      ["JSON", '{"actions":[{"say":"hi"}]}'],
      ["unclosed root", "<Response><Say>hi</Say>"],
      ["mismatched case in closing tag", "<Response><Say>hi</say></Response>"],
      ["truncated tag", "<Response><Say"],
      ["unquoted attribute", "<Response><Wait Seconds=3/></Response>"],
      ["attribute without value", "<Response><Record PlayBeep/></Response>"],
      ["duplicate attribute", '<Response><Wait Seconds="1" Seconds="2"/></Response>'],
      ["text after the root", "<Response/> trailing"],
      ["text after a closed root", "<Response></Response>\ntrailing"],
      ["text before the root", "leading <Response/>"],
      ["two roots", "<Response/><Response/>"],
      ["bare ampersand", "<Response><Say>AT&T</Say></Response>"],
      ["HTML entity", "<Response><Say>a&nbsp;b</Say></Response>"],
      ["undefined entity", "<Response><Say>&xxe;</Say></Response>"],
      ["invalid character reference", "<Response><Say>&#0;</Say></Response>"],
      ["surrogate character reference", "<Response><Say>&#xD800;</Say></Response>"],
      [
        "HTML page with doctype",
        "<!DOCTYPE html>\n<html><head><title>Oops</title></head><body>Error</body></html>",
      ],
      ["HTML page, not well-formed", "<html><body><p>Internal Server Error<br></body></html>"],
      ["HTML page, lowercase doctype", "<!doctype html><html><body>x</body></html>"],
    ])("%s -> MARKUP_NOT_XML", (_name, body) => {
      failure(body, "MARKUP_NOT_XML");
    });

    it.each([
      "application/json",
      "image/png",
      "multipart/form-data; boundary=x",
      "application/x-www-form-urlencoded",
    ])("content type %s -> MARKUP_NOT_XML even with a VoiceML body", (type) => {
      expect(failure("<Response/>", "MARKUP_NOT_XML", type).errorMessage).toContain(type.split(";")[0]!);
    });

    it.each([
      "text/xml",
      "application/xml; charset=utf-8",
      "application/voiceml+xml",
      "TEXT/XML",
      "text/html; charset=utf-8",
      "text/plain",
      "application/octet-stream",
      "",
    ])("content type %j is accepted (the body decides)", (type) => {
      expect(actions("<Response><Say>hi</Say></Response>", type)).toHaveLength(1);
    });
  });

  describe("entities and DTDs", () => {
    const billionLaughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol9 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
]>
<Response><Say>&lol9;</Say></Response>`;

    it.each([
      ["billion laughs", billionLaughs],
      [
        "external entity (XXE)",
        '<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><Response><Say>&xxe;</Say></Response>',
      ],
      ["external DTD", '<!DOCTYPE Response SYSTEM "http://attacker.example/x.dtd"><Response/>'],
      ["parameter entity", '<!DOCTYPE r [<!ENTITY % p SYSTEM "http://attacker.example/p">%p;]><Response/>'],
      ["internal entity", '<!DOCTYPE r [<!ENTITY name "Bob">]><Response><Say>Hi &name;</Say></Response>'],
      ["empty DOCTYPE", "<!DOCTYPE Response><Response/>"],
      ["lowercase doctype", "<!doctype Response><Response/>"],
      [
        "DOCTYPE after a comment",
        "<!-- x --><!DOCTYPE r [<!ENTITY a 'b'>]><Response><Say>&a;</Say></Response>",
      ],
      ["DOCTYPE inside the root", '<Response><!DOCTYPE r [<!ENTITY a "b">]><Say>&a;</Say></Response>'],
      [
        "DOCTYPE inside the root with a large entity",
        `<Response><!DOCTYPE r [<!ENTITY a "${"x".repeat(20_000)}">]><Say>&a;</Say></Response>`,
      ],
    ])("%s -> MARKUP_DTD_FORBIDDEN", (_name, body) => {
      failure(body, "MARKUP_DTD_FORBIDDEN");
    });

    it("'<!DOCTYPE' inside a comment is not a DTD", () => {
      expect(actions("<Response><!-- <!DOCTYPE x> --><Say>a</Say></Response>")).toHaveLength(1);
    });

    it("entities in attribute values are the builtins only", () => {
      expect(one('<Record NextUri="/next?a=1&amp;b=2"/>')).toMatchObject({ nextUri: "/next?a=1&b=2" });
      failure('<Response><Record NextUri="/next?a=1&b=2"/></Response>', "MARKUP_NOT_XML");
    });
  });

  describe("limits", () => {
    function padded(totalBytes: number): string {
      const head = "<Response><!--";
      const tail = "--></Response>";
      return head + "x".repeat(totalBytes - head.length - tail.length) + tail;
    }

    it(`accepts exactly ${MARKUP_LIMITS.maxBytes} bytes and rejects one more`, () => {
      expect(actions(padded(MARKUP_LIMITS.maxBytes))).toEqual([]);
      expect(failure(padded(MARKUP_LIMITS.maxBytes + 1), "MARKUP_TOO_LARGE").errorMessage).toContain("65536");
    });

    it("counts UTF-8 bytes, not characters", () => {
      const body = `<Response><!--${"é".repeat(33_000)}--></Response>`;
      expect(body.length).toBeLessThan(MARKUP_LIMITS.maxBytes);
      failure(body, "MARKUP_TOO_LARGE");
    });

    it("rejects a huge body without reading it", () => {
      failure("<".repeat(10_000_000), "MARKUP_TOO_LARGE");
    });

    function nested(depth: number): string {
      // Response (1) > Label (2) > a (3) ... : unsupported actions' content is not validated.
      const inner = depth - 2;
      return `<Response><Label>${"<a>".repeat(inner)}${"</a>".repeat(inner)}</Label></Response>`;
    }

    it(`accepts depth ${MARKUP_LIMITS.maxDepth} and rejects ${MARKUP_LIMITS.maxDepth + 1}`, () => {
      expect(actions(nested(MARKUP_LIMITS.maxDepth))).toHaveLength(1);
      failure(nested(MARKUP_LIMITS.maxDepth + 1), "MARKUP_TOO_DEEP");
    });

    it.each([300, 5000])("rejects depth %i (beyond the parser's own limit) as MARKUP_TOO_DEEP", (depth) => {
      failure(nested(depth), "MARKUP_TOO_DEEP");
    });

    it("rejects depth as large as 64 KiB allows without crashing", () => {
      const n = Math.floor((MARKUP_LIMITS.maxBytes - 40) / 7);
      failure(`${"<a>".repeat(n)}${"</a>".repeat(n)}`, "MARKUP_TOO_DEEP");
    });

    it(`accepts ${MARKUP_LIMITS.maxActions} actions and rejects one more`, () => {
      const max = "<Wait/>".repeat(MARKUP_LIMITS.maxActions);
      expect(actions(`<Response>${max}</Response>`)).toHaveLength(MARKUP_LIMITS.maxActions);
      failure(`<Response>${max}<Wait/></Response>`, "MARKUP_TOO_MANY_ACTIONS");
    });

    it("counts Input prompts as actions", () => {
      const half = "<Input><Say>x</Say></Input>".repeat(MARKUP_LIMITS.maxActions / 2);
      expect(actions(`<Response>${half}</Response>`)).toHaveLength(MARKUP_LIMITS.maxActions / 2);
      failure(`<Response>${half}<Say>x</Say></Response>`, "MARKUP_TOO_MANY_ACTIONS");
    });
  });

  describe("never throws", () => {
    // Deterministic PRNG (mulberry32) so failures reproduce.
    function rng(seed: number): () => number {
      let a = seed >>> 0;
      return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
    }

    const FRAGMENTS = [
      "<Response>",
      "</Response>",
      "<response>",
      "<Response/>",
      "<Say>",
      "</Say>",
      "<say voice='x'>",
      "hello",
      " ",
      "\n",
      "<Play>",
      "</Play>",
      "https://a.example/x.wav",
      '<Wait Seconds="3"/>',
      '<Wait Seconds="0"/>',
      '<Record MaxDurationSeconds="3601"/>',
      '<Record StopKey="#" PlayBeep="maybe"/>',
      '<Call Strategy="simultaneous">',
      "</Call>",
      "<Endpoint>",
      "</Endpoint>",
      "+61255501234",
      "sip:a@b.example",
      "<Input NumDigits='4'>",
      "</Input>",
      "<!--",
      "-->",
      "<![CDATA[",
      "]]>",
      "<!DOCTYPE r [<!ENTITY a 'b'>]>",
      "&amp;",
      "&a;",
      "&#x41;",
      "&#99999999;",
      "&",
      "<?xml version='1.0'?>",
      "<?pi x?>",
      "<",
      ">",
      "/>",
      '"',
      "'",
      "=",
      "<__proto__>",
      "<constructor a='1'>",
      "</constructor>",
      "<Foo>",
      "\uFEFF",
      "\u0000",
      "😀",
      "<Stream>",
      "</Stream>",
    ];

    const VALID = `<?xml version="1.0"?><Response><Say voice="v">Hi &amp; bye</Say><Input NumDigits="2" NextUri="/n"><Say>Press</Say></Input><Call Strategy="failover" CallerId="+61255501234">${ENDPOINT}<Endpoint>sip:a@b.example</Endpoint></Call><Record StopKey="#"/><Say><![CDATA[x]]></Say><!-- c --><Redirect>/x</Redirect></Response>`;

    function check(body: string): void {
      let result: MarkupResult;
      try {
        result = parseVoiceMl(body);
      } catch (err) {
        throw new Error(`parseVoiceMl threw on ${JSON.stringify(body)}: ${String(err)}`);
      }
      if (result.ok) {
        expect(Array.isArray(result.actions)).toBe(true);
      } else {
        expect(ERROR_CODES.has(result.errorCode), `${result.errorCode} for ${JSON.stringify(body)}`).toBe(
          true,
        );
        expect(typeof result.errorMessage).toBe("string");
        expect(result.errorMessage.length).toBeGreaterThan(0);
        expect(result.errorMessage.length).toBeLessThan(600);
      }
    }

    it("on random fragment soups", () => {
      const random = rng(1);
      for (let i = 0; i < 2000; i++) {
        const n = Math.floor(random() * 25);
        let body = "";
        for (let j = 0; j < n; j++) body += FRAGMENTS[Math.floor(random() * FRAGMENTS.length)];
        check(body);
      }
    });

    it("on every truncation of a valid document", () => {
      expect(parseVoiceMl(VALID).ok).toBe(true);
      for (let i = 0; i <= VALID.length; i++) check(VALID.slice(0, i));
    });

    it("on random mutations of a valid document", () => {
      const random = rng(2);
      const alphabet = `<>/="'&;#![]-? \n\taZ09😀\u0000`;
      for (let i = 0; i < 2000; i++) {
        const chars = [...VALID];
        const edits = 1 + Math.floor(random() * 5);
        for (let e = 0; e < edits; e++) {
          const at = Math.floor(random() * (chars.length + 1));
          const op = random();
          const ch = alphabet[Math.floor(random() * alphabet.length)] ?? "<";
          if (op < 0.33) chars.splice(at, 1);
          else if (op < 0.66) chars.splice(at, 0, ch);
          else chars[at] = ch;
        }
        check(chars.join(""));
      }
    });

    it("on random code points", () => {
      const random = rng(3);
      for (let i = 0; i < 500; i++) {
        const n = Math.floor(random() * 200);
        let body = "";
        for (let j = 0; j < n; j++) {
          const cp = random() < 0.7 ? 0x20 + Math.floor(random() * 0x60) : Math.floor(random() * 0x10ffff);
          body += cp >= 0xd800 && cp <= 0xdfff ? "?" : String.fromCodePoint(cp);
        }
        check(body);
      }
    });

    it("on non-string input at runtime", () => {
      for (const value of [undefined, null, 42, {}, Buffer.from("<Response/>")]) {
        const result = parseVoiceMl(value as unknown as string);
        expect(result.ok).toBe(false);
      }
    });
  });
});

describe("resolveUri", () => {
  const base = "https://handler.example/app/voice?call=1";

  it.each([
    ["next", "https://handler.example/app/next"],
    ["/root", "https://handler.example/root"],
    ["../up", "https://handler.example/up"],
    ["?step=2", "https://handler.example/app/voice?step=2"],
    ["//cdn.example/a.wav", "https://cdn.example/a.wav"],
    ["http://other.example/x", "http://other.example/x"],
    ["HTTPS://Other.Example:443/x", "https://other.example/x"],
  ])("resolves %j", (ref, expected) => {
    expect(resolveUri(base, ref)).toBe(expected);
  });

  it.each(["relative/base", "ftp://h.example/", "javascript:alert(1)", ""])("rejects the base %j", (bad) => {
    expect(() => resolveUri(bad, "next")).toThrow(TypeError);
  });

  it("rejects a reference that leaves http(s)", () => {
    expect(() => resolveUri(base, "javascript:alert(1)")).toThrow(TypeError);
  });
});
