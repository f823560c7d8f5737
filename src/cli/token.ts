/**
 * `switchboard service-accounts token`: what the SDKs do with a key file, for curl and
 * scripts — sign a JWT assertion with the key (RS256, node:crypto: the CLI
 * stays free of other packages) and exchange it at the key file's
 * `token_uri` for an access token (RFC 7523).
 */
import { createPrivateKey, sign } from "node:crypto";
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { StringValueSchema } from "@bufbuild/protobuf/wkt";
import { done, str, strs } from "./args.js";
import { type Command, UsageError } from "./command.js";

const GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer";

interface KeyFile {
  private_key_id: string;
  private_key: string;
  client_email: string;
  token_uri: string;
}

function readKeyFile(path: string): KeyFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new UsageError(
      `cannot read the key file ${path}: ${err instanceof Error ? err.message : err}`,
      "service-accounts token",
    );
  }
  const k = parsed as Partial<KeyFile> & { type?: unknown };
  for (const field of ["private_key_id", "private_key", "client_email", "token_uri"] as const) {
    if (typeof k[field] !== "string" || k[field] === "") {
      throw new UsageError(
        `${path} is not a service account key file (no ${field})`,
        "service-accounts token",
      );
    }
  }
  return k as KeyFile;
}

const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** A JWS compact serialization, RS256, with the header and claims the official SDKs send. */
function signAssertion(key: KeyFile, scope: string, now: number): string {
  const input = `${b64({ alg: "RS256", typ: "JWT", kid: key.private_key_id })}.${b64({
    iss: key.client_email,
    sub: key.client_email,
    aud: key.token_uri,
    iat: now,
    exp: now + 3600,
    scope,
  })}`;
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key.private_key);
  } catch {
    throw new UsageError("the key file's private_key is not a PEM private key", "service-accounts token");
  }
  return `${input}.${sign("sha256", Buffer.from(input), privateKey).toString("base64url")}`;
}

export const tokenCommands: Command[] = [
  {
    path: ["service-accounts", "token"],
    summary: "Get an access token with a service account key file (prints it)",
    options: {
      "key-file": { type: "string", value: "FILE", description: "the JSON key file (required)" },
      scope: {
        type: "string",
        multiple: true,
        value: "SERVICE",
        description: "a service the token is for, e.g. enfonica.voice.v1beta1.Calls (repeatable; required)",
      },
    },
    description:
      "The token works like an API key (Authorization: Bearer <token>) for the services named,\n" +
      "within the account's bindings, until it expires or the account or key is disabled.",
    examples: [
      "switchboard service-accounts token --key-file billing-bot.json --scope enfonica.voice.v1beta1.Calls",
      'curl -H "Authorization: Bearer $(switchboard service-accounts token --key-file bot.json --scope enfonica.messaging.v1.Messages)" ...',
    ],
    async run({ values }) {
      const file = str(values, "key-file");
      if (!file) throw new UsageError("give --key-file", "service-accounts token");
      const scopes = strs(values, "scope");
      if (scopes.length === 0) throw new UsageError("give at least one --scope", "service-accounts token");
      const key = readKeyFile(file);
      const host = new URL(key.token_uri).host;
      const scope = scopes.map((s) => (s.startsWith("https://") ? s : `https://${host}/${s}`)).join(" ");
      const assertion = signAssertion(key, scope, Math.floor(Date.now() / 1000));
      const res = await fetch(key.token_uri, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: GRANT, assertion }).toString(),
      });
      const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      if (!res.ok || typeof body.access_token !== "string") {
        throw new Error(
          `${String(body.error ?? `HTTP ${res.status}`)}: ${String(body.error_description ?? "")}`,
        );
      }
      const token = body.access_token;
      return done(StringValueSchema, create(StringValueSchema, { value: token }), token);
    },
  },
];
