/**
 * Stack traces of the compiled service that point at the TypeScript sources,
 * with source maps read only when a stack is first formatted.
 *
 * `node --enable-source-maps` parses every module's source map as the module
 * loads: for the bundle in dist/ that held about 50 MB of resident memory for
 * the life of the process, though most processes never format a stack. Here
 * V8's `Error.prepareStackTrace` hook maps each frame of a file that has a
 * `<file>.map` beside it; a file's map is read and parsed the first time one
 * of its frames is formatted, and kept for the next stacks. Frames of files
 * without a map (Node's own, node_modules outside the bundle) are left as V8
 * writes them, and so is everything else about the trace.
 */
import { readFileSync } from "node:fs";
import { SourceMap, type SourceMapPayload } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

/** Parsed maps by file URL; null: the file has no (readable) map. */
const maps = new Map<string, SourceMap | null>();

/** How many source maps have been read so far (tests check that none is read before a stack is). */
export function loadedSourceMaps(): number {
  let n = 0;
  for (const map of maps.values()) if (map !== null) n++;
  return n;
}

function mapOf(fileUrl: string): SourceMap | null {
  let map = maps.get(fileUrl);
  if (map !== undefined) return map;
  map = null;
  try {
    const payload = JSON.parse(readFileSync(fileURLToPath(`${fileUrl}.map`), "utf8")) as SourceMapPayload;
    map = new SourceMap(payload);
  } catch {
    // No map beside the file, or not one we can read: its frames stay as they are.
  }
  maps.set(fileUrl, map);
  return map;
}

/** `source` of a map resolved against the file it maps, as a path when it is a file. */
function sourcePath(source: string, fileUrl: string): string {
  const url = new URL(source, fileUrl);
  return url.protocol === "file:" ? fileURLToPath(url) : url.href;
}

function frame(site: NodeJS.CallSite): string {
  const text = String(site);
  const file = site.getFileName();
  const line = site.getLineNumber();
  const column = site.getColumnNumber();
  if (!file || line === null || column === null) return text;
  const fileUrl = file.startsWith("file:")
    ? file
    : file.startsWith("/")
      ? pathToFileURL(file).href
      : undefined;
  if (fileUrl === undefined || !fileUrl.endsWith(".js")) return text;
  const map = mapOf(fileUrl);
  if (map === null) return text;
  const entry = map.findEntry(line - 1, column - 1);
  if (!("originalSource" in entry)) return text;
  const where = `${sourcePath(entry.originalSource, fileUrl)}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  const at = `${file}:${line}:${column}`;
  const i = text.lastIndexOf(at);
  return i === -1 ? text : text.slice(0, i) + where + text.slice(i + at.length);
}

function header(error: unknown): string {
  try {
    return Error.prototype.toString.call(error);
  } catch {
    return "Error";
  }
}

/** Installs the hook (idempotent); the compiled service's entry calls it first. */
export function installSourceMappedStacks(): void {
  Error.prepareStackTrace = (error, sites) => {
    let out = header(error);
    for (const site of sites) {
      let text: string;
      try {
        text = frame(site);
      } catch {
        text = String(site);
      }
      out += `\n    at ${text}`;
    }
    return out;
  };
}
