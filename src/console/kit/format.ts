/** Display helpers: times, durations and enum values. */
import type { Duration, Timestamp } from "@bufbuild/protobuf/wkt";

export function time(t: Timestamp | undefined): string {
  if (t === undefined) return "—";
  const d = new Date(Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6));
  return d
    .toISOString()
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z");
}

export function millis(t: Timestamp | Duration | undefined): number | undefined {
  return t === undefined ? undefined : Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

export function duration(d: Duration | undefined): string {
  const ms = millis(d);
  return ms === undefined ? "—" : `${(ms / 1000).toFixed(1)} s`;
}

/** The name of an enum value (`Call_State.COMPLETED` -> `COMPLETED`). */
export function enumName(e: Record<number | string, string | number>, value: number): string {
  const n = e[value];
  return typeof n === "string" ? n : String(value);
}

/** The id of a resource name: `projects/p/calls/abc` -> `abc`. */
export function lastSegment(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1);
}
