/**
 * Transcription of call recordings is not built. A CallRecordingConfig
 * asking for it (`transcribe` DEFAULT) — on a call (CreateCall) or a SIP
 * domain (Create/UpdateSipDomain) — is refused with UNIMPLEMENTED (ErrorInfo
 * reason NOT_IMPLEMENTED, metadata `field`), after every INVALID_ARGUMENT
 * check, so that asked-for transcription is never silently dropped.
 * TRANSCRIBE_OPTION_UNSPECIFIED and DISABLED are fine.
 */
import { Code, type ConnectError } from "@connectrpc/connect";
import { rpcError } from "../api/errors.js";
import type { StoredCallRecording } from "../db/schema/index.js";

/** The UNIMPLEMENTED error when `config` (at `configField`) asks for transcription; undefined otherwise. */
export function transcriptionNotImplemented(
  config: Pick<StoredCallRecording, "transcribe"> | undefined,
  configField: string,
): ConnectError | undefined {
  if (config === undefined || config.transcribe !== "DEFAULT") return undefined;
  const field = `${configField}.transcribe`;
  return rpcError(
    Code.Unimplemented,
    "NOT_IMPLEMENTED",
    `${field}: transcription of call recordings is not implemented yet; use DISABLED or leave it unset`,
    { feature: "transcription", field },
  );
}
