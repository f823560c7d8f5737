/**
 * The download route of recording audio (one link of the server's fallback
 * chain): `GET|HEAD /v1beta1/projects/{p}/calls/{c}/recordings/{r}/audio/{wav|mp3}`
 * with a signed, unexpired `expires` + `sig` (links.ts). No credential is
 * needed: the signature is the authorization. Answers with the file, its
 * Content-Type (`audio/x-wav`, `audio/mpeg`) and Content-Length; 403 for a
 * bad or expired link; 404 when the recording or rendition is gone; 405 for
 * other methods. Errors use the REST error shape.
 */
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Fallback } from "../transport/fallback.js";
import type { NodeServerResponse } from "../transport/types.js";
import type { RecordingsDomain } from "./domain.js";
import { parseAudioPath } from "./links.js";

function writeError(res: NodeServerResponse, code: number, status: string, message: string): void {
  const body = JSON.stringify({ error: { code, message, status } });
  res.writeHead(code, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    "Cache-Control": "no-store",
  });
  res.end(body);
}

export function recordingAudioRoute(domain: RecordingsDomain): Fallback {
  return async (req, res) => {
    // Every request of the fallback chain (REST included) passes here: no URL
    // parsing unless the path can be an audio link (URL reads \ as /).
    if (!(req.url ?? "").includes("recordings")) return false;
    const url = new URL(req.url ?? "/", "http://localhost");
    const ref = parseAudioPath(url.pathname);
    if (ref === undefined) return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { Allow: "GET, HEAD", "Content-Length": 0 });
      res.end();
      return true;
    }
    if (!domain.links.verify(url.pathname, url.searchParams)) {
      writeError(res, 403, "PERMISSION_DENIED", "the download link is invalid or has expired");
      return true;
    }
    const audio = await domain.openAudio(ref);
    if (audio === undefined) {
      writeError(res, 404, "NOT_FOUND", "the recording audio does not exist");
      return true;
    }
    res.writeHead(200, {
      "Content-Type": audio.mimeType,
      "Content-Length": audio.size,
      "Content-Disposition": `attachment; filename="${ref.recordingId}.${ref.format}"`,
      "Cache-Control": "private, max-age=0, no-store",
    });
    if (req.method === "HEAD") {
      audio.body.destroy();
      res.end();
      return true;
    }
    await pipeline(audio.body, res as unknown as Writable);
    return true;
  };
}
