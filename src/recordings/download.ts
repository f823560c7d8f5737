/**
 * The download route of recording audio (one link of the server's fallback
 * chain): `GET|HEAD /v1beta1/projects/{p}/calls/{c}/recordings/{r}/audio/{wav|mp3}`
 * with a signed, unexpired `expires` + `sig` (links.ts). No credential is
 * needed: the signature is the authorization. Answers with the file, its
 * Content-Type (`audio/x-wav`, `audio/mpeg`) and Content-Length; 403 for a
 * bad or expired link; 404 when the recording or rendition is gone; 405 for
 * other methods. Errors use the REST error shape.
 *
 * Ranges (ranges.ts), as browsers' audio players ask for them: every answer
 * says `Accept-Ranges: bytes`; a GET with one `Range` the audio satisfies
 * is `206 Partial Content` with `Content-Range` and that part's
 * `Content-Length`; one it cannot satisfy is `416` with
 * `Content-Range: bytes *\/{size}`; several ranges, another unit, a bad
 * header or an `If-Range` (the audio of a link never changes, but it has no
 * validator to compare) get the whole file, 200. HEAD answers the whole
 * file's headers without reading it.
 */
import type { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Fallback } from "../transport/fallback.js";
import type { NodeServerResponse } from "../transport/types.js";
import type { RecordingsDomain } from "./domain.js";
import { parseAudioPath } from "./links.js";
import { parseRange, RangeNotSatisfiable } from "./ranges.js";

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
    const disposition = `attachment; filename="${ref.recordingId}.${ref.format}"`;
    const headers = (mimeType: string, length: number) => ({
      "Content-Type": mimeType,
      "Content-Length": length,
      "Content-Disposition": disposition,
      "Accept-Ranges": "bytes",
      "Cache-Control": "private, max-age=0, no-store",
    });
    if (req.method === "HEAD") {
      const info = await domain.audioInfo(ref);
      if (info === undefined) {
        writeError(res, 404, "NOT_FOUND", "the recording audio does not exist");
        return true;
      }
      res.writeHead(200, headers(info.mimeType, info.size));
      res.end();
      return true;
    }
    const range = req.headers["if-range"] === undefined ? parseRange(req.headers.range) : undefined;
    let audio: Awaited<ReturnType<RecordingsDomain["openAudio"]>>;
    try {
      audio = await domain.openAudio(ref, range);
    } catch (err) {
      if (!(err instanceof RangeNotSatisfiable)) throw err;
      const body = JSON.stringify({
        error: { code: 416, message: "the range is outside the audio", status: "OUT_OF_RANGE" },
      });
      res.writeHead(416, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(body),
        "Content-Range": `bytes */${err.size}`,
        "Accept-Ranges": "bytes",
        "Cache-Control": "no-store",
      });
      res.end(body);
      return true;
    }
    if (audio === undefined) {
      writeError(res, 404, "NOT_FOUND", "the recording audio does not exist");
      return true;
    }
    if (audio.range === undefined) {
      res.writeHead(200, headers(audio.mimeType, audio.size));
    } else {
      const { start, end } = audio.range;
      res.writeHead(206, {
        ...headers(audio.mimeType, end - start + 1),
        "Content-Range": `bytes ${start}-${end}/${audio.size}`,
      });
    }
    await pipeline(audio.body, res as unknown as Writable);
    return true;
  };
}
