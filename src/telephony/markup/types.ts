/**
 * The typed program a VoiceML (call-control markup) document turns into.
 *
 * `parseVoiceMl` (./parse.ts) produces these; the call engine executes them. Every default and
 * range below is applied by the parser, so the engine never sees a missing or out-of-range
 * value. Decisions are listed in ./README.md.
 */

/** A key of the telephone keypad (DTMF). */
export type DtmfKey = "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9" | "*" | "#";

/** `PostProcessing` values of `<Record>` / `<RecordCall>` (proto enum `PostProcessing`). */
export type PostProcessing = "trim-silence";

/** `<Say>`: speak `text` (text-to-speech). */
export interface SayAction {
  readonly kind: "say";
  /** Trimmed text content, 1..4000 characters. */
  readonly text: string;
  readonly voice?: string;
  /** A BCP 47 language tag such as `en-AU`. */
  readonly language?: string;
}

/** `<Play>`: play the audio file whose URL is the element's text. */
export interface PlayAction {
  readonly kind: "play";
  /** Absolute http(s) URL, or a reference relative to the document's URL (see `resolveUri`). */
  readonly url: string;
}

/** `<Wait Seconds="n"/>`: silence for `seconds` (1..600, default 1). */
export interface WaitAction {
  readonly kind: "wait";
  readonly seconds: number;
}

/** Actions allowed inside `<Input>` as prompts, played while digits are collected. */
export type PromptAction = SayAction | PlayAction | WaitAction;

/** `<Input>`: collect DTMF digits, then request `nextUri` with the digits. */
export interface InputAction {
  readonly kind: "input";
  /** Stop after this many digits (1..32); absent = no fixed count. */
  readonly numDigits?: number;
  /** Seconds to wait for the first / next digit (1..60, default 5). */
  readonly timeoutSeconds: number;
  /** Key that ends input (default `#`); `null` when the document disabled it with `FinishOnKey=""`. */
  readonly finishOnKey: DtmfKey | null;
  readonly nextUri?: string;
  /** Say / Play / Wait children, in document order (may be empty). */
  readonly prompts: readonly PromptAction[];
}

/** `<Redirect>`: fetch the markup at the URL in the element's text and run it instead. */
export interface RedirectAction {
  readonly kind: "redirect";
  readonly uri: string;
}

/** `<Reject>`: refuse an unanswered call (default reason `rejected`). */
export interface RejectAction {
  readonly kind: "reject";
  readonly reason: "busy" | "rejected";
}

/** The target of a `<Call>` leg: a phone number (`+E164` or `tel:+E164`) or a SIP URI. */
export type Endpoint =
  | { readonly type: "phone"; readonly phoneNumber: string }
  | { readonly type: "sip"; readonly uri: string };

export type CallStrategy = "linear" | "simultaneous" | "failover";

/** `<Call>`: create a child call to the endpoints and bridge it with this call. */
export interface CallAction {
  readonly kind: "call";
  /** One to ten endpoints, in document order. */
  readonly endpoints: readonly Endpoint[];
  /** Default `linear`. */
  readonly strategy: CallStrategy;
  /** Ring time per attempt before giving up (1..600, default 30). */
  readonly timeoutSeconds: number;
  /** Maximum duration of the bridged call (1..86400, default 14400 = 4 h). */
  readonly maxDurationSeconds: number;
  /** `+E164` caller id presented to the endpoints. */
  readonly callerId?: string;
  readonly nextUri?: string;
}

/** `<Record>`: record the caller. */
export interface RecordAction {
  readonly kind: "record";
  /** 1..3600, default 600. */
  readonly maxDurationSeconds: number;
  /** Seconds of silence that end the recording: 1..30, default 5. */
  readonly timeoutSeconds: number;
  /** Key that ends the recording; absent = none. */
  readonly stopKey?: DtmfKey;
  /** Default true. */
  readonly playBeep: boolean;
  /** Default empty. */
  readonly postProcessing: readonly PostProcessing[];
  readonly recordingReadyUri?: string;
  readonly nextUri?: string;
}

/** `<RecordCall>`: record the whole call from the trigger on. */
export interface RecordCallAction {
  readonly kind: "recordCall";
  /** Default `answer`. */
  readonly trigger: "answer" | "bridge";
  readonly postProcessing: readonly PostProcessing[];
  readonly recordingReadyUri?: string;
}

/**
 * `<Stream>`: bridge the call with an open media stream (Streams.StreamCall)
 * until the stream's client closes it; the document then goes on (or
 * `nextUri` is requested).
 */
export interface StreamAction {
  readonly kind: "stream";
  /**
   * The stream: its id (1..36 of `A-Za-z0-9_-`, in the call's project) or
   * its full name `projects/{project}/streams/{id}`.
   */
  readonly name: string;
  /** Seconds to wait for the stream to be opened (0..30, default 10). */
  readonly timeoutSeconds: number;
  readonly nextUri?: string;
}

/**
 * Label and ReceiveFax are actions of the contract that this service does not implement.
 * They parse (attributes kept raw, lower-cased names, content not validated) so that the engine
 * can end the call with error code `UNSUPPORTED_ACTION` naming the action, rather than the
 * document being reported as malformed.
 */
export interface UnsupportedAction {
  readonly kind: "label" | "receiveFax";
  readonly unsupported: true;
  /** Canonical element name: `Label` or `ReceiveFax`. */
  readonly element: string;
  readonly attributes: Readonly<Record<string, string>>;
}

export type Action =
  | SayAction
  | PlayAction
  | WaitAction
  | InputAction
  | RedirectAction
  | RejectAction
  | CallAction
  | RecordAction
  | RecordCallAction
  | StreamAction
  | UnsupportedAction;

/** Error code the engine uses when it meets an action with `unsupported: true`. */
export const UNSUPPORTED_ACTION = "UNSUPPORTED_ACTION";

/** Stable error codes of `parseVoiceMl`. */
export const MarkupErrorCode = {
  /** Body larger than `MARKUP_LIMITS.maxBytes` (UTF-8). */
  TooLarge: "MARKUP_TOO_LARGE",
  /** Empty body, non-XML content type, HTML page, malformed XML, undefined entity, several roots. */
  NotXml: "MARKUP_NOT_XML",
  /** A `<!DOCTYPE>` anywhere in the document (no DTDs, so no external or custom entities). */
  DtdForbidden: "MARKUP_DTD_FORBIDDEN",
  /** The root element is not `<Response>` (any case). */
  NoResponseRoot: "MARKUP_NO_RESPONSE_ROOT",
  /** Elements nested deeper than `MARKUP_LIMITS.maxDepth`. */
  TooDeep: "MARKUP_TOO_DEEP",
  /** More than `MARKUP_LIMITS.maxActions` actions (Input prompts included). */
  TooManyActions: "MARKUP_TOO_MANY_ACTIONS",
  /** An element of `<Response>` that is not a VoiceML action. */
  UnknownAction: "MARKUP_UNKNOWN_ACTION",
  /** An attribute value outside its type or range, or an attribute given twice. */
  InvalidAttribute: "MARKUP_INVALID_ATTRIBUTE",
  /** Text content missing, too long or malformed (Say text, Play/Redirect URL, Endpoint). */
  InvalidContent: "MARKUP_INVALID_CONTENT",
  /** An element where it is not allowed (Endpoint outside Call, Say inside Say, ...), or a Call without Endpoint. */
  InvalidNesting: "MARKUP_INVALID_NESTING",
} as const;
export type MarkupErrorCode = (typeof MarkupErrorCode)[keyof typeof MarkupErrorCode];

export const MARKUP_LIMITS = {
  /** Maximum body size in UTF-8 bytes (64 KiB). */
  maxBytes: 64 * 1024,
  /** Maximum element depth; `<Response>` is depth 1, `<Endpoint>` depth 3. */
  maxDepth: 10,
  /** Maximum number of actions in a document, Input prompts included. */
  maxActions: 100,
  /** Maximum `<Endpoint>` children of one `<Call>`. */
  maxEndpoints: 10,
  /** Maximum length of `<Say>` text, in characters. */
  maxSayLength: 4000,
  /** Maximum length of a URI (attribute or text content). */
  maxUriLength: 2048,
} as const;

export interface MarkupSuccess {
  readonly ok: true;
  /** Zero actions (`<Response/>`) means: hang up. */
  readonly actions: readonly Action[];
}

export interface MarkupFailure {
  readonly ok: false;
  readonly errorCode: MarkupErrorCode;
  /** Human-readable, bounded in size; names the element / attribute / allowed values. */
  readonly errorMessage: string;
  /** Canonical element name, when the error concerns one. */
  readonly element?: string;
  /** Canonical attribute name, for MARKUP_INVALID_ATTRIBUTE. */
  readonly attribute?: string;
}

export type MarkupResult = MarkupSuccess | MarkupFailure;
