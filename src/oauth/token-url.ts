/**
 * The token endpoint's public URL: OAUTH_TOKEN_URL, or else the service's
 * own URL + `/oauth2/token` — the address it listens on once listening, the
 * configured HOST and PORT before.
 */
import type { Config } from "../config.js";
import { TOKEN_PATH } from "./token-route.js";

export function baseUrlOf(tls: boolean, host: string, port: number): string {
  const h = host.includes(":") ? `[${host}]` : host;
  return `${tls ? "https" : "http"}://${h}:${port}`;
}

export class TokenUrl {
  private listening: string | undefined;

  constructor(private readonly config: Config) {}

  /** Called once the port is bound. */
  listeningOn(host: string, port: number): void {
    this.listening = baseUrlOf(this.config.tls !== undefined, host, port);
  }

  get url(): string {
    if (this.config.oauth.tokenUrl !== undefined) return this.config.oauth.tokenUrl;
    const base =
      this.listening ?? baseUrlOf(this.config.tls !== undefined, this.config.host, this.config.port);
    return `${base}${TOKEN_PATH}`;
  }

  /** The path the endpoint answers on besides /oauth2/token. */
  get path(): string {
    // Asked by every request going down the fallback chain: parsed once per URL.
    const url = this.url;
    if (url !== this.parsed?.url) this.parsed = { url, path: new URL(url).pathname };
    return this.parsed.path;
  }

  private parsed: { url: string; path: string } | undefined;
}
