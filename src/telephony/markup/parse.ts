/**
 * VoiceML parser + validator: a handler's response body -> a typed, validated list of actions.
 * Pure: no I/O, no execution, never throws. Decisions (ranges, defaults, tolerance) are listed
 * in ./README.md.
 */
import { Attributes, isE164 } from "./attributes.js";
import {
  type Action,
  type CallAction,
  type CallStrategy,
  type Endpoint,
  type InputAction,
  MARKUP_LIMITS,
  type MarkupResult,
  type PlayAction,
  type PromptAction,
  type RecordAction,
  type RecordCallAction,
  type RedirectAction,
  type RejectAction,
  type SayAction,
  type StreamAction,
  type UnsupportedAction,
  type WaitAction,
} from "./types.js";
import { checkUriReference } from "./uri.js";
import { MarkupError, quote, readXml, shortName, type XmlElement } from "./xml.js";

/** Counts actions across the document (Input prompts included). */
interface Budget {
  actions: number;
}

type Builder = (node: XmlElement, budget: Budget) => Action;

function spend(budget: Budget): void {
  budget.actions++;
  if (budget.actions > MARKUP_LIMITS.maxActions) {
    throw new MarkupError(
      "MARKUP_TOO_MANY_ACTIONS",
      `Markup has more than ${MARKUP_LIMITS.maxActions} actions`,
    );
  }
}

function childElements(node: XmlElement): XmlElement[] {
  return node.children.filter((c): c is XmlElement => c.type === "element");
}

/** Fails on non-whitespace text directly inside `node`. */
function noText(element: string, node: XmlElement): void {
  for (const child of node.children) {
    if (child.type === "text" && child.text.trim() !== "") {
      throw new MarkupError(
        "MARKUP_INVALID_CONTENT",
        `<${element}> must not contain text (found ${quote(child.text.trim(), 32)})`,
        element,
      );
    }
  }
}

/** Fails on any child element of `node`. */
function noElements(element: string, node: XmlElement): void {
  const [child] = childElements(node);
  if (child !== undefined) {
    throw new MarkupError(
      "MARKUP_INVALID_NESTING",
      `<${element}> must not contain elements (found <${shortName(child.name)}>)`,
      element,
    );
  }
}

/** An empty action element (whitespace and comments allowed). */
function empty(element: string, node: XmlElement): void {
  noElements(element, node);
  noText(element, node);
}

/** The trimmed text content (text and CDATA) of an element that has no child elements. */
function textContent(element: string, node: XmlElement): string {
  noElements(element, node);
  let text = "";
  for (const child of node.children) if (child.type === "text") text += child.text;
  return text.trim();
}

function uriContent(element: string, node: XmlElement): string {
  const text = textContent(element, node);
  const problem = text === "" ? "is empty" : checkUriReference(text);
  if (problem !== undefined) {
    throw new MarkupError(
      "MARKUP_INVALID_CONTENT",
      `<${element}> must contain an absolute http(s) URL or a relative reference: ${quote(text)} ${problem}`,
      element,
    );
  }
  return text;
}

const LANGUAGE = /^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}$/;
const VOICE = /^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$/;

function say(node: XmlElement): SayAction {
  const attrs = new Attributes("Say", node);
  const text = textContent("Say", node);
  if (text === "" || text.length > MARKUP_LIMITS.maxSayLength) {
    throw new MarkupError(
      "MARKUP_INVALID_CONTENT",
      `<Say> must contain 1 to ${MARKUP_LIMITS.maxSayLength} characters of text (has ${text.length})`,
      "Say",
    );
  }
  const voice = attrs.token("Voice", VOICE, "a voice name of up to 64 letters, digits and ._:+-");
  const language = attrs.token("Language", LANGUAGE, "a language tag such as en-AU");
  return {
    kind: "say",
    text,
    ...(voice !== undefined && { voice }),
    ...(language !== undefined && { language }),
  };
}

function play(node: XmlElement): PlayAction {
  return { kind: "play", url: uriContent("Play", node) };
}

function wait(node: XmlElement): WaitAction {
  const attrs = new Attributes("Wait", node);
  empty("Wait", node);
  return { kind: "wait", seconds: attrs.int("Seconds", 1, 600, 1) };
}

const PROMPTS: ReadonlyMap<string, (node: XmlElement) => PromptAction> = new Map<
  string,
  (node: XmlElement) => PromptAction
>([
  ["say", say],
  ["play", play],
  ["wait", wait],
]);

function input(node: XmlElement, budget: Budget): InputAction {
  const attrs = new Attributes("Input", node);
  noText("Input", node);
  const numDigits = attrs.optionalInt("NumDigits", 1, 32);
  const timeoutSeconds = attrs.int("TimeoutSeconds", 1, 60, 5);
  const finishRaw = attrs.raw("FinishOnKey");
  const finishOnKey =
    finishRaw !== undefined && finishRaw.trim() === "" ? null : (attrs.key("FinishOnKey") ?? "#");
  const nextUri = attrs.uri("NextUri");
  const prompts: PromptAction[] = [];
  for (const child of childElements(node)) {
    const build = PROMPTS.get(child.name.toLowerCase());
    if (build === undefined) {
      throw new MarkupError(
        "MARKUP_INVALID_NESTING",
        `<Input> may contain only <Say>, <Play> and <Wait> (found <${shortName(child.name)}>)`,
        "Input",
      );
    }
    spend(budget);
    prompts.push(build(child));
  }
  return {
    kind: "input",
    ...(numDigits !== undefined && { numDigits }),
    timeoutSeconds,
    finishOnKey,
    ...(nextUri !== undefined && { nextUri }),
    prompts,
  };
}

function redirect(node: XmlElement): RedirectAction {
  return { kind: "redirect", uri: uriContent("Redirect", node) };
}

function reject(node: XmlElement): RejectAction {
  const attrs = new Attributes("Reject", node);
  empty("Reject", node);
  return { kind: "reject", reason: attrs.enum("Reason", ["busy", "rejected"], "rejected") };
}

const SIP_URI =
  /^sips?:(?:[^@\s<>"]+@)?[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?(?:;[^\s<>"]*)?$/i;
const TEL_URI = /^tel:(\+[0-9().-]+)$/i;

function endpoint(node: XmlElement): Endpoint {
  new Attributes("Endpoint", node); // rejects duplicated attributes; none are defined
  const text = textContent("Endpoint", node);
  if (isE164(text)) return { type: "phone", phoneNumber: text };
  const tel = TEL_URI.exec(text)?.[1];
  if (tel !== undefined) {
    const number = tel.replace(/[().-]/g, "");
    if (isE164(number)) return { type: "phone", phoneNumber: number };
  } else if (text.length <= 256 && SIP_URI.test(text)) {
    return { type: "sip", uri: text };
  }
  throw new MarkupError(
    "MARKUP_INVALID_CONTENT",
    `<Endpoint> must contain +E164, tel:+E164 or a sip: URI (found ${quote(text)})`,
    "Endpoint",
  );
}

const STRATEGIES: readonly CallStrategy[] = ["linear", "simultaneous", "failover"];

function call(node: XmlElement): CallAction {
  const attrs = new Attributes("Call", node);
  noText("Call", node);
  const strategy = attrs.enum("Strategy", STRATEGIES, "linear");
  const timeoutSeconds = attrs.int("TimeoutSeconds", 1, 600, 30);
  const maxDurationSeconds = attrs.int("MaxDurationSeconds", 1, 86_400, 14_400);
  const callerId = attrs.e164("CallerId");
  const nextUri = attrs.uri("NextUri");
  const children = childElements(node);
  const other = children.find((c) => c.name.toLowerCase() !== "endpoint");
  if (other !== undefined) {
    throw new MarkupError(
      "MARKUP_INVALID_NESTING",
      `<Call> may contain only <Endpoint> elements (found <${shortName(other.name)}>)`,
      "Call",
    );
  }
  if (children.length === 0 || children.length > MARKUP_LIMITS.maxEndpoints) {
    throw new MarkupError(
      "MARKUP_INVALID_NESTING",
      `<Call> must contain 1 to ${MARKUP_LIMITS.maxEndpoints} <Endpoint> elements (has ${children.length})`,
      "Call",
    );
  }
  return {
    kind: "call",
    endpoints: children.map(endpoint),
    strategy,
    timeoutSeconds,
    maxDurationSeconds,
    ...(callerId !== undefined && { callerId }),
    ...(nextUri !== undefined && { nextUri }),
  };
}

function record(node: XmlElement): RecordAction {
  const attrs = new Attributes("Record", node);
  empty("Record", node);
  const maxDurationSeconds = attrs.int("MaxDurationSeconds", 1, 3600, 600);
  const timeoutSeconds = attrs.int("TimeoutSeconds", 1, 30, 5);
  const stopKey = attrs.key("StopKey");
  const playBeep = attrs.bool("PlayBeep", true);
  const postProcessing = attrs.postProcessing("PostProcessing");
  const recordingReadyUri = attrs.uri("RecordingReadyUri");
  const nextUri = attrs.uri("NextUri");
  return {
    kind: "record",
    maxDurationSeconds,
    timeoutSeconds,
    ...(stopKey !== undefined && { stopKey }),
    playBeep,
    postProcessing,
    ...(recordingReadyUri !== undefined && { recordingReadyUri }),
    ...(nextUri !== undefined && { nextUri }),
  };
}

function recordCall(node: XmlElement): RecordCallAction {
  const attrs = new Attributes("RecordCall", node);
  empty("RecordCall", node);
  const trigger = attrs.enum("Trigger", ["answer", "bridge"], "answer");
  const postProcessing = attrs.postProcessing("PostProcessing");
  const recordingReadyUri = attrs.uri("RecordingReadyUri");
  return {
    kind: "recordCall",
    trigger,
    postProcessing,
    ...(recordingReadyUri !== undefined && { recordingReadyUri }),
  };
}

/** A stream id, or a stream's full name. */
const STREAM_NAME = /^(?:projects\/[^/\s]{1,100}\/streams\/)?[A-Za-z0-9_-]{1,36}$/;

function stream(node: XmlElement): StreamAction {
  const attrs = new Attributes("Stream", node);
  empty("Stream", node);
  const description = "a stream id (1 to 36 of A-Z a-z 0-9 _ -) or projects/{project}/streams/{id}";
  const name = attrs.token("Name", STREAM_NAME, description);
  if (name === undefined) throw attrs.invalid("Name", "", `the attribute is required: ${description}`);
  const timeoutSeconds = attrs.int("TimeoutSeconds", 0, 30, 10);
  const nextUri = attrs.uri("NextUri");
  return { kind: "stream", name, timeoutSeconds, ...(nextUri !== undefined && { nextUri }) };
}

function unsupported(kind: UnsupportedAction["kind"], element: string): Builder {
  return (node) => ({
    kind,
    unsupported: true,
    element,
    attributes: new Attributes(element, node).all(),
  });
}

const ACTIONS: ReadonlyMap<string, Builder> = new Map<string, Builder>([
  ["say", say],
  ["play", play],
  ["wait", wait],
  ["input", input],
  ["redirect", redirect],
  ["reject", reject],
  ["call", call],
  ["record", record],
  ["recordcall", recordCall],
  ["label", unsupported("label", "Label")],
  ["stream", stream],
  ["receivefax", unsupported("receiveFax", "ReceiveFax")],
]);

/** Canonical names of the actions, for messages and documentation. */
export const VOICEML_ACTIONS: readonly string[] = [
  "Call",
  "Input",
  "Label",
  "Play",
  "ReceiveFax",
  "Record",
  "RecordCall",
  "Redirect",
  "Reject",
  "Say",
  "Stream",
  "Wait",
];

function actionsOf(root: XmlElement): Action[] {
  noText("Response", root);
  const budget: Budget = { actions: 0 };
  const actions: Action[] = [];
  for (const node of childElements(root)) {
    const lower = node.name.toLowerCase();
    const build = ACTIONS.get(lower);
    if (build === undefined) {
      if (lower === "endpoint") {
        throw new MarkupError(
          "MARKUP_INVALID_NESTING",
          "<Endpoint> is allowed only inside <Call>",
          "Endpoint",
        );
      }
      throw new MarkupError(
        "MARKUP_UNKNOWN_ACTION",
        `Unknown action <${shortName(node.name)}> (known actions: ${VOICEML_ACTIONS.join(", ")})`,
        shortName(node.name),
      );
    }
    spend(budget);
    actions.push(build(node, budget));
  }
  return actions;
}

/**
 * Parses and validates a VoiceML document.
 *
 * @param body the handler's response body, already decoded to text
 * @param contentType the response's Content-Type, if any: XML types, `text/*` and
 *   `application/octet-stream` are accepted (the body decides); anything else is MARKUP_NOT_XML
 * @returns the actions in document order (none = hang up), or a stable error code and message.
 *   Never throws.
 */
export function parseVoiceMl(body: string, contentType?: string): MarkupResult {
  try {
    const root = readXml(body, contentType);
    if (root.name.toLowerCase() !== "response") {
      const hint = root.name.toLowerCase() === "html" ? " (an HTML page, not VoiceML)" : "";
      throw new MarkupError(
        "MARKUP_NO_RESPONSE_ROOT",
        `Markup root element must be <Response>, found <${shortName(root.name)}>${hint}`,
        shortName(root.name),
      );
    }
    return { ok: true, actions: actionsOf(root) };
  } catch (err) {
    if (err instanceof MarkupError) {
      return {
        ok: false,
        errorCode: err.code,
        errorMessage: err.message,
        ...(err.element !== undefined && { element: err.element }),
        ...(err.attribute !== undefined && { attribute: err.attribute }),
      };
    }
    // Not expected: keep the service (and the caller's call loop) running regardless.
    return {
      ok: false,
      errorCode: "MARKUP_NOT_XML",
      errorMessage: `Markup could not be read: ${quote(err instanceof Error ? err.message : String(err), 160)}`,
    };
  }
}
