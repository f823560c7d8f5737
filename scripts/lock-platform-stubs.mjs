#!/usr/bin/env node
/**
 * Adds package-lock.json entries for platform-specific optional packages
 * that the reachable npm registry does not serve (e.g. @biomejs/cli-win32-x64,
 * @bufbuild/buf-darwin-arm64). npm leaves them out of the lock when it cannot
 * fetch them, and `npm ci` then refuses the lock as "out of sync". Each stub
 * carries the package's os/cpu (from its name), so npm skips it on every
 * other platform and never fetches it. Run after `npm install` changes the
 * lock: `node scripts/lock-platform-stubs.mjs`.
 */
import { readFileSync, writeFileSync } from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(file, "utf8"));
const packages = lock.packages;

const OS = { android: "android", darwin: "darwin", linux: "linux", win32: "win32", freebsd: "freebsd" };
const CPU = { arm64: "arm64", x64: "x64", armv7: "arm", arm: "arm", ia32: "ia32" };

function platformOf(name) {
  const parts = name.split("/").pop().split("-");
  const os = parts.find((p) => p in OS);
  const cpu = parts.find((p) => p in CPU);
  if (!os || !cpu) return undefined;
  const out = { os: [OS[os]], cpu: [CPU[cpu]] };
  if (parts.includes("musl")) out.libc = ["musl"];
  else if (os === "linux") out.libc = ["glibc"];
  return out;
}

let added = 0;
for (const [path, pkg] of Object.entries(packages)) {
  for (const [dep, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = path === "" ? "" : `${path}/`;
    const nested = `${base}node_modules/${dep}`;
    const hoisted = `node_modules/${dep}`;
    if (packages[nested] || packages[hoisted]) continue;
    const platform = platformOf(dep);
    if (!platform) continue;
    packages[hoisted] = { version, dev: pkg.dev, optional: true, ...platform };
    if (packages[hoisted].dev === undefined) delete packages[hoisted].dev;
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform stub(s) to package-lock.json`);
