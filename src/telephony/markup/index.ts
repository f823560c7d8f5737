/** VoiceML (call-control markup): parse and validate a handler's response into typed actions. */
export { parseVoiceMl, VOICEML_ACTIONS } from "./parse.js";
export type {
  Action,
  CallAction,
  CallStrategy,
  DtmfKey,
  Endpoint,
  InputAction,
  MarkupFailure,
  MarkupResult,
  MarkupSuccess,
  PlayAction,
  PostProcessing,
  PromptAction,
  RecordAction,
  RecordCallAction,
  RedirectAction,
  RejectAction,
  SayAction,
  StreamAction,
  UnsupportedAction,
  WaitAction,
} from "./types.js";
export { MARKUP_LIMITS, MarkupErrorCode, UNSUPPORTED_ACTION } from "./types.js";
export { checkUriReference, resolveUri } from "./uri.js";
