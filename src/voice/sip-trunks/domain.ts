/**
 * Carrier trunks (issue 27 item 4): the operator's upstream SIP trunks.
 * `SipTrunksDomain` holds the rules; service.ts maps protos.
 *
 * Rules (violations are INVALID_ARGUMENT naming the proto field path):
 * - sip_trunk_id: chosen by the operator, `^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`;
 *   a taken id is ALREADY_EXISTS.
 * - address: `host[:port]`, the host a DNS name (letters, digits, hyphens,
 *   dots; at most 253 characters), a dotted-quad IPv4 address or a
 *   bracketed IPv6 address; the port 1 to 65535. Required.
 * - transport: UDP (also when unspecified), TCP or TLS.
 * - username: at most 128 characters without control characters, spaces,
 *   `"` or `\`. password: at most 128 characters without control
 *   characters; write-only (`password_set` says whether one is stored),
 *   stored reversibly (secret-box.ts). A password needs a username.
 * - inbound_networks: up to 100 IPv4 CIDR blocks, host bits zero.
 * - priority: 0 to 65535, lower first. enabled: as given.
 * - display_name: at most 100 characters.
 * - On update, an empty password keeps the stored one unless the update
 *   mask names `password` (then it is removed).
 */
import { alreadyExists, type FieldViolation, invalidArgument, notFound } from "../../api/errors.js";
import { charLength } from "../../api/labels.js";
import { type PageResult, readPage } from "../../api/pagination.js";
import { hasControlCharacters } from "../../api/safe-input.js";
import type { Clock } from "../../clock.js";
import { isUniqueViolation } from "../../db/client.js";
import type { SipTrunkRow, SipTrunkTransportValue } from "../../db/schema/index.js";
import { parseIpv4, validateCidrBlocks } from "../sip-domains/cidr.js";
import { SIP_TRUNK_KEY, type SipTrunksRepository } from "./repository.js";
import { sipTrunkChangesOf } from "./routing.js";
import type { SecretBox } from "./secret-box.js";

export const RESOURCE_TYPE = "admin.switchboard/SipTrunk";
export const COLLECTION = "sipTrunks";
export const SIP_TRUNK_ID_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export const LIMITS = { displayName: 100, username: 128, password: 128, priority: 65535 } as const;

export type TrunkTransport = SipTrunkTransportValue;

export interface SipTrunk {
  id: string;
  name: string;
  displayName: string;
  address: string;
  transport: TrunkTransport;
  username: string;
  passwordSet: boolean;
  inboundNetworks: string[];
  enabled: boolean;
  priority: number;
  createTime: Date;
  updateTime: Date;
}

/** What the operator sets. `password` undefined: keep the stored one (update only). */
export interface SipTrunkSettings {
  displayName: string;
  address: string;
  transport: TrunkTransport;
  username: string;
  password: string | undefined;
  inboundNetworks: string[];
  enabled: boolean;
  priority: number;
}

/** A trunk as the SIP edge uses it: with its password readable. */
export interface SipTrunkCredentials extends SipTrunk {
  password: string | undefined;
}

export interface PageParams {
  pageSize: number;
  pageToken: string;
}

export function sipTrunkName(id: string): string {
  return `${COLLECTION}/${id}`;
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i;

/** Whether `text` is `host[:port]` as described in the file comment. */
export function isTrunkAddress(text: string): boolean {
  let host: string;
  let port: string | undefined;
  const v6 = /^\[([0-9A-Fa-f:.]+)\](?::([0-9]{1,5}))?$/.exec(text);
  if (v6 !== null) {
    if (!isIpv6(v6[1]!)) return false;
    port = v6[2];
    host = "";
  } else {
    const m = /^([^:]+)(?::([0-9]{1,5}))?$/.exec(text);
    if (m === null) return false;
    host = m[1]!;
    port = m[2];
    const dotted = /^[0-9.]+$/.test(host);
    if (dotted ? !parseIpv4(host).ok : !isDnsName(host)) return false;
  }
  if (port !== undefined) {
    const n = Number(port);
    if (n < 1 || n > 65535) return false;
  }
  return true;
}

function isDnsName(host: string): boolean {
  const name = host.endsWith(".") ? host.slice(0, -1) : host;
  return name.length > 0 && name.length <= 253 && name.split(".").every((l) => DNS_LABEL.test(l));
}

function isIpv6(text: string): boolean {
  const parts = text.split("::");
  if (parts.length > 2) return false;
  const groups = parts.flatMap((p) => (p === "" ? [] : p.split(":")));
  let count = groups.length;
  const last = groups[groups.length - 1];
  if (last?.includes(".")) {
    if (!parseIpv4(last).ok) return false;
    count += 1; // an embedded IPv4 address takes two groups
    groups.pop();
  }
  if (!groups.every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return false;
  return parts.length === 2 ? count <= 7 : count === 8;
}

export function trunkViolations(settings: SipTrunkSettings): FieldViolation[] {
  const v: FieldViolation[] = [];
  const f = (field: string, description: string, reason: string) =>
    v.push({ field: `sip_trunk.${field}`, description, reason });
  if (charLength(settings.displayName) > LIMITS.displayName) {
    f("display_name", `must be at most ${LIMITS.displayName} characters`, "string.max_len");
  }
  if (settings.address === "") f("address", "is required: host[:port]", "required");
  else if (!isTrunkAddress(settings.address)) {
    f(
      "address",
      "must be host[:port]: a DNS name, an IPv4 address or a bracketed IPv6 address, and a port 1 to 65535",
      "address.format",
    );
  }
  if (
    charLength(settings.username) > LIMITS.username ||
    /[\s"\\]/.test(settings.username) ||
    hasControlCharacters(settings.username)
  ) {
    f(
      "username",
      `must be at most ${LIMITS.username} characters without spaces, control characters, " or \\`,
      "string.pattern",
    );
  }
  if (settings.password !== undefined) {
    if (charLength(settings.password) > LIMITS.password || hasControlCharacters(settings.password)) {
      f(
        "password",
        `must be at most ${LIMITS.password} characters without control characters`,
        "string.pattern",
      );
    } else if (settings.password !== "" && settings.username === "") {
      f("username", "is required with a password", "required");
    }
  }
  for (const problem of validateCidrBlocks(settings.inboundNetworks)) {
    f(
      problem.index === null ? "inbound_networks" : `inbound_networks[${problem.index}]`,
      problem.message,
      problem.index === null ? "repeated.max_items" : "cidr.format",
    );
  }
  if (!Number.isInteger(settings.priority) || settings.priority < 0 || settings.priority > LIMITS.priority) {
    f("priority", `must be 0 to ${LIMITS.priority}`, "int32.range");
  }
  return v;
}

export class SipTrunksDomain {
  constructor(
    private readonly repo: SipTrunksRepository,
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  view(row: SipTrunkRow): SipTrunk {
    return {
      id: row.id,
      name: sipTrunkName(row.id),
      displayName: row.displayName,
      address: row.address,
      transport: row.transport,
      username: row.username,
      passwordSet: row.password !== null,
      inboundNetworks: [...row.inboundNetworks],
      enabled: row.enabled,
      priority: row.priority,
      createTime: row.createTime,
      updateTime: row.updateTime,
    };
  }

  async create(id: string, input: SipTrunkSettings): Promise<SipTrunk> {
    const violations = trunkViolations(input);
    if (!SIP_TRUNK_ID_PATTERN.test(id)) {
      violations.unshift({
        field: "sip_trunk_id",
        description:
          "must be 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit",
        reason: id === "" ? "required" : "string.pattern",
      });
    }
    if (violations.length > 0) throw invalidArgument(violations);
    const now = this.clock.now();
    try {
      const row = await this.repo.insert({
        id,
        displayName: input.displayName,
        address: input.address,
        transport: input.transport,
        username: input.username,
        password: this.sealed(input.password),
        inboundNetworks: input.inboundNetworks,
        enabled: input.enabled,
        priority: input.priority,
        createTime: now,
        updateTime: now,
      });
      this.changed();
      return this.view(row);
    } catch (err) {
      if (isUniqueViolation(err, SIP_TRUNK_KEY)) {
        throw alreadyExists(RESOURCE_TYPE, sipTrunkName(id), `${sipTrunkName(id)} already exists`, {
          sip_trunk_id: id,
        });
      }
      throw err;
    }
  }

  async get(id: string): Promise<SipTrunk> {
    const row = await this.repo.find(id);
    if (row === undefined) throw notFound(RESOURCE_TYPE, sipTrunkName(id));
    return this.view(row);
  }

  async list(page: PageParams): Promise<PageResult<SipTrunk>> {
    const result = await readPage({ ...page, query: { method: "ListSipTrunks" } }, (after, limit) =>
      this.repo.list(after, limit),
    );
    return { items: result.items.map((r) => this.view(r)), nextPageToken: result.nextPageToken };
  }

  /** Updates a trunk; `plan` computes the new settings from the current trunk, or undefined for no change. */
  async update(id: string, plan: (current: SipTrunk) => SipTrunkSettings | undefined): Promise<SipTrunk> {
    const updated = await this.updateInTransaction(id, plan);
    this.changed();
    return updated;
  }

  private updateInTransaction(
    id: string,
    plan: (current: SipTrunk) => SipTrunkSettings | undefined,
  ): Promise<SipTrunk> {
    return this.repo.transaction(async (repo) => {
      const row = await repo.find(id, true);
      if (row === undefined) throw notFound(RESOURCE_TYPE, sipTrunkName(id));
      const current = this.view(row);
      const changes = plan(current);
      if (changes === undefined) return current;
      const violations = trunkViolations(changes);
      if (
        changes.password === undefined &&
        current.passwordSet &&
        changes.username === "" &&
        !violations.some((x) => x.field === "sip_trunk.username")
      ) {
        violations.push({
          field: "sip_trunk.username",
          description: "is required while a password is stored",
          reason: "required",
        });
      }
      if (violations.length > 0) throw invalidArgument(violations);
      const updated = await repo.update(id, {
        displayName: changes.displayName,
        address: changes.address,
        transport: changes.transport,
        username: changes.username,
        ...(changes.password === undefined ? {} : { password: this.sealed(changes.password) }),
        inboundNetworks: changes.inboundNetworks,
        enabled: changes.enabled,
        priority: changes.priority,
        updateTime: this.clock.now(),
      });
      return this.view(updated!);
    });
  }

  async delete(id: string): Promise<void> {
    if (!(await this.repo.delete(id))) throw notFound(RESOURCE_TYPE, sipTrunkName(id));
    this.changed();
  }

  /** After a change committed: this process's trunk routing reads the list again. */
  private changed(): void {
    sipTrunkChangesOf(this.repo.db).changed(undefined);
  }

  /**
   * The enabled trunks in the order outgoing calls try them, with their
   * passwords readable (SecretBoxError when one cannot be opened).
   */
  async enabledTrunks(): Promise<SipTrunkCredentials[]> {
    const rows = await this.repo.enabled();
    return rows.map((row) => ({
      ...this.view(row),
      password: row.password === null ? undefined : this.box.open(row.password),
    }));
  }

  private sealed(password: string | undefined): string | null {
    return password === undefined || password === "" ? null : this.box.seal(password);
  }
}
