/**
 * A load balancer's endpoints as the alias form takes them, one per line:
 * `<sip or sips URI>[ priority=N][ weight=N][ disabled]` (priority 0-65535,
 * lower first, default 0; weight 1-65535, default 10). Checked as typed;
 * the API checks again.
 */
export interface Endpoint {
  uri: string;
  priority: number;
  weight: number;
  enabled: boolean;
}

function field(name: string, text: string, min: number, max: number): number | string {
  const n = Number(text);
  return /^\d+$/.test(text) && n >= min && n <= max ? n : `${name} is ${min} to ${max}`;
}

/** The endpoints, and a problem per line that has one. */
export function parseEndpoints(text: string): { endpoints: Endpoint[]; problems: string[] } {
  const endpoints: Endpoint[] = [];
  const problems: string[] = [];
  for (const line of text.split("\n").map((l) => l.trim())) {
    if (line === "") continue;
    const [uri = "", ...options] = line.split(/\s+/);
    const e: Endpoint = { uri, priority: 0, weight: 10, enabled: true };
    const wrong: string[] = [];
    if (!/^sips?:[^\s]+$/i.test(uri)) wrong.push("not a sip: or sips: URI");
    for (const o of options) {
      const [key, value = ""] = o.split("=");
      if (key === "priority") {
        const v = field("priority", value, 0, 65535);
        if (typeof v === "number") e.priority = v;
        else wrong.push(v);
      } else if (key === "weight") {
        const v = field("weight", value, 1, 65535);
        if (typeof v === "number") e.weight = v;
        else wrong.push(v);
      } else if (o === "disabled") e.enabled = false;
      else wrong.push(`"${o}" is not priority=N, weight=N or disabled`);
    }
    if (wrong.length > 0) problems.push(`${line}: ${wrong.join(", ")}`);
    else endpoints.push(e);
  }
  return { endpoints, problems };
}

/** An endpoint as a line of the form. */
export function endpointText(e: { uri: string; priority: number; weight: number; enabled: boolean }): string {
  return `${e.uri} priority=${e.priority} weight=${e.weight || 10}${e.enabled ? "" : " disabled"}`;
}
