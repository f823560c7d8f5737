/**
 * Helpers of the OpenAPI tests: the committed documents, and the
 * google.api.http bindings of every generated service, read independently of
 * the plugin (from the protobuf-es registries in gen/).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type DescService, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

// biome-ignore lint/suspicious/noExplicitAny: JSON documents are walked freely in tests
export type Json = Record<string, any>;

export function loadDocument(which: "public" | "admin"): Json {
  return JSON.parse(readFileSync(join(root, `gen/openapi/${which}.openapi.json`), "utf8"));
}

/** Every service of every generated `gen/**\/*_pb.ts` file. */
export async function generatedServices(): Promise<DescService[]> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith("_pb.ts")) files.push(path);
    }
  };
  walk(join(root, "gen"));
  const services = new Map<string, DescService>();
  for (const file of files.sort()) {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      const v = value as { kind?: string; typeName?: string };
      if (v?.kind === "service" && typeof v.typeName === "string")
        services.set(v.typeName, value as DescService);
    }
  }
  return [...services.values()];
}

export interface Binding {
  service: DescService;
  method: string;
  httpMethod: string;
  template: string;
  body: string;
}

/** Every google.api.http rule and additional binding of `services`. */
export function httpBindings(services: readonly DescService[]): Binding[] {
  const out: Binding[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const r of [rule, ...rule.additionalBindings] as HttpRule[]) {
        const p = r.pattern;
        if (p.case === undefined) continue;
        const [httpMethod, template] =
          p.case === "custom" ? [p.value.kind.toLowerCase(), p.value.path] : [p.case, p.value];
        out.push({ service, method: method.name, httpMethod, template, body: r.body });
      }
    }
  }
  return out;
}

/** The literal shape of a google.api.http template: variables by their segments, `*` kept. */
export function templateShape(template: string): string {
  return template.replace(/\{[^}=]+(?:=([^}]*))?\}/g, (_m, sub: string | undefined) => sub ?? "*");
}

/** The same shape of an OpenAPI path: every `{param}` is one `*` segment. */
export function openapiShape(path: string): string {
  return path.replace(/\{[^}]+\}/g, "*");
}

export function documentOf(service: DescService): "public" | "admin" {
  return service.typeName.startsWith("switchboard.admin.") ? "admin" : "public";
}
