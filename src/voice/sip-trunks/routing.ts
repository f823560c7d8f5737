/**
 * Which carrier trunks calls use (issue 27 item 4): the enabled trunks,
 * lowest `priority` first (ties by id), with their passwords readable.
 *
 * The database is the truth, on every replica: the list is read from it and
 * kept for at most `TRUNK_CACHE_SECONDS` (2 s), so an admin API change —
 * made on any replica — takes effect within that time everywhere, without
 * a database read per call; on the replica that made it, at once (the
 * change is announced in-process, `sipTrunkChangesOf`). Reads while one is under way share it. A read
 * that fails keeps the last list (logged by the caller) rather than failing
 * calls while the database blips; with no list yet it throws.
 *
 * A trunk whose stored password cannot be opened (SIP_CREDENTIALS_KEY
 * changed or removed, secret-box.ts) is kept without its password: its
 * challenges then go unanswered and the call fails over to the next trunk.
 */
import type { Clock } from "../../clock.js";
import { type Changes, changesPerDatabase } from "../../db/changes.js";
import type { SipTrunkRow } from "../../db/schema/index.js";
import type { SipTrunk } from "./domain.js";
import { type SecretBox, SecretBoxError } from "./secret-box.js";

export const TRUNK_CACHE_SECONDS = 2;

/** In-process news that `db`'s trunks changed (SipTrunksDomain tells, after the change committed). */
export const sipTrunkChangesOf: (db: object) => Changes<string> = changesPerDatabase<string>();

/** A trunk as calls use it. */
export interface RoutedTrunk extends SipTrunk {
  /** The password, undefined when none is stored or it cannot be opened. */
  password: string | undefined;
  /** Why a stored password could not be opened, if so. */
  passwordError?: string;
}

export interface TrunkSource {
  enabled(): Promise<SipTrunkRow[]>;
}

export class TrunkRouting {
  private cached: { at: number; trunks: RoutedTrunk[] } | undefined;
  private reading: Promise<RoutedTrunk[]> | undefined;

  constructor(
    private readonly source: TrunkSource,
    private readonly box: SecretBox,
    private readonly clock: Clock,
    private readonly ttlMs = TRUNK_CACHE_SECONDS * 1000,
  ) {}

  /** The enabled trunks in the order calls try them. */
  async trunks(): Promise<RoutedTrunk[]> {
    const now = this.clock.now().getTime();
    if (this.cached !== undefined && now - this.cached.at < this.ttlMs) return this.cached.trunks;
    this.reading ??= this.read(now).finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** Whether any trunk is enabled. */
  async any(): Promise<boolean> {
    return (await this.trunks()).length > 0;
  }

  /** Forget the list: the next call reads the database (this replica changed a trunk). */
  invalidate(): void {
    this.cached = undefined;
  }

  /** The enabled trunk one of whose inbound networks holds `address` (IPv4), in priority order. */
  async trunkOfSource(address: string): Promise<RoutedTrunk | undefined> {
    const ip = ipv4ToNumber(address.replace(/^::ffff:/i, ""));
    if (ip === undefined) return undefined;
    for (const trunk of await this.trunks()) {
      if (trunk.inboundNetworks.some((cidr) => inCidr(ip, cidr))) return trunk;
    }
    return undefined;
  }

  private async read(now: number): Promise<RoutedTrunk[]> {
    let rows: SipTrunkRow[];
    try {
      rows = await this.source.enabled();
    } catch (err) {
      if (this.cached !== undefined) return this.cached.trunks;
      throw err;
    }
    const trunks = rows.map((row) => this.routed(row));
    this.cached = { at: now, trunks };
    return trunks;
  }

  private routed(row: SipTrunkRow): RoutedTrunk {
    const trunk: RoutedTrunk = {
      id: row.id,
      name: `sipTrunks/${row.id}`,
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
      password: undefined,
    };
    if (row.password !== null) {
      try {
        trunk.password = this.box.open(row.password);
      } catch (err) {
        if (!(err instanceof SecretBoxError)) throw err;
        trunk.passwordError = err.message;
      }
    }
    return trunk;
  }
}

function ipv4ToNumber(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return undefined;
    const v = Number(p);
    if (v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

function inCidr(ip: number, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const network = ipv4ToNumber(base ?? "");
  const length = bits === undefined ? 32 : Number(bits);
  if (network === undefined || !Number.isInteger(length) || length < 0 || length > 32) return false;
  const size = 2 ** (32 - length);
  return Math.floor(ip / size) === Math.floor(network / size);
}
