/** Small parsers of the forms' multi-value fields. */

/** One URI per line (or comma separated), blanks dropped. */
export function parseLines(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** `key=value` per line; returns the map, or the first line that is not a pair. */
export function parseLabels(text: string): { labels: Record<string, string> } | { error: string } {
  const labels: Record<string, string> = {};
  for (const line of parseLines(text)) {
    const eq = line.indexOf("=");
    if (eq <= 0) return { error: `"${line}" is not key=value` };
    labels[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return { labels };
}

export function formatLabels(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join("\n");
}
