/**
 * Storage of SIP domains: the `sip_domains` and `sip_domain_ids` tables.
 * `VoiceStore` bundles it with the aliases repository so the domain layer
 * can run one transaction over both (a collaboration domain and its alias
 * are created together).
 */
import { and, eq, isNull, ne, type SQL, sql } from "drizzle-orm";
import {
  keysetAfter,
  keysetOrder,
  type PagePosition,
  preparedPage,
  preparedPages,
} from "../../api/pagination.js";
import type { DbOrTx } from "../../db/client.js";
import { preparedOn } from "../../db/prepared.js";
import {
  type NewSipDomainRow,
  type SipDomainRow,
  sipDomainIds,
  sipDomains as t,
} from "../../db/schema/index.js";
import { AliasesRepository } from "../aliases/repository.js";
import { SipRegistrationsRepository } from "../sip-registrations/repository.js";
import { SipUsersRepository } from "../sip-users/repository.js";

/** The primary key of `sip_domain_ids`: violated when an id was ever issued before. */
export const SIP_DOMAIN_ID_KEY = "sip_domain_ids_pkey";

/**
 * Key of the transaction-level advisory lock taken by every change to the
 * blocks of domain-optional domains, so that two concurrent changes cannot
 * both pass the overlap check.
 */
const DOMAIN_OPTIONAL_LOCK_KEY = 0x5b0a4e;

/** Get and List (without deleted domains): prepared once per database handle (src/db/prepared.ts). */
function prepareReads(db: DbOrTx) {
  const ph = sql.placeholder;
  const live = and(eq(t.projectId, ph("projectId")), isNull(t.deleteTime));
  return {
    find: db
      .select()
      .from(t)
      .where(and(eq(t.projectId, ph("projectId")), eq(t.id, ph("id"))))
      .prepare("sip_domains_find"),
    ...preparedPages(() => db.select().from(t).$dynamic(), t, live, "sip_domains"),
  };
}

const preparedReads = new WeakMap<object, ReturnType<typeof prepareReads>>();

export class SipDomainsRepository {
  constructor(private readonly db: DbOrTx) {}

  /** Records `id` as issued; throws a unique violation of SIP_DOMAIN_ID_KEY when it was before. */
  async reserveId(id: string, projectId: string, createTime: Date): Promise<void> {
    await this.db.insert(sipDomainIds).values({ id, projectId, createTime });
  }

  async insert(row: NewSipDomainRow): Promise<SipDomainRow> {
    const [inserted] = await this.db.insert(t).values(row).returning();
    return inserted!;
  }

  /** A project's domain (deleted or not); `lock` takes a row lock until the transaction ends. */
  async find(projectId: string, id: string, lock = false): Promise<SipDomainRow | undefined> {
    const reads = lock ? undefined : preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) {
      const [row] = await reads.find.execute({ projectId, id });
      return row;
    }
    const query = this.db
      .select()
      .from(t)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)));
    const [row] = lock ? await query.for("update") : await query;
    return row;
  }

  /** The domain with `id`, whatever its project (ids are global). */
  async findById(id: string): Promise<SipDomainRow | undefined> {
    const [row] = await this.db.select().from(t).where(eq(t.id, id));
    return row;
  }

  /** The project's domains in keyset order, strictly after `after`; deleted ones only if asked. */
  list(
    projectId: string,
    showDeleted: boolean,
    after: PagePosition | undefined,
    limit: number,
  ): Promise<SipDomainRow[]> {
    const reads = showDeleted ? undefined : preparedOn(preparedReads, this.db, prepareReads);
    if (reads !== undefined) return preparedPage(reads, { projectId }, after, limit);
    const where: SQL = and(eq(t.projectId, projectId), showDeleted ? undefined : isNull(t.deleteTime))!;
    return this.db
      .select()
      .from(t)
      .where(and(where, keysetAfter(t.createTime, t.id, after)))
      .orderBy(...keysetOrder(t.createTime, t.id))
      .limit(limit);
  }

  async update(
    projectId: string,
    id: string,
    values: Partial<Omit<NewSipDomainRow, "id" | "projectId" | "type" | "createTime">>,
  ): Promise<SipDomainRow | undefined> {
    const [row] = await this.db
      .update(t)
      .set(values)
      .where(and(eq(t.projectId, projectId), eq(t.id, id)))
      .returning();
    return row;
  }

  /** The live (not deleted) domain-optional domains, except `exceptId`. */
  listDomainOptional(exceptId?: string): Promise<SipDomainRow[]> {
    return this.db
      .select()
      .from(t)
      .where(
        and(
          eq(t.domainOptional, true),
          isNull(t.deleteTime),
          exceptId === undefined ? undefined : ne(t.id, exceptId),
        ),
      )
      .orderBy(t.id);
  }

  /** Serialises changes to domain-optional blocks until the enclosing transaction ends. */
  async lockDomainOptional(): Promise<void> {
    await this.db.execute(sql`select pg_advisory_xact_lock(${sql.raw(String(DOMAIN_OPTIONAL_LOCK_KEY))})`);
  }
}

/** The voice repositories over one database or transaction (SIP domains and what hangs off them). */
export class VoiceStore {
  readonly sipDomains: SipDomainsRepository;
  readonly aliases: AliasesRepository;
  readonly sipUsers: SipUsersRepository;
  readonly sipRegistrations: SipRegistrationsRepository;

  /** The database or transaction the repositories use (for `recordCreated` of idempotent creates). */
  constructor(readonly db: DbOrTx) {
    this.sipDomains = new SipDomainsRepository(db);
    this.aliases = new AliasesRepository(db);
    this.sipUsers = new SipUsersRepository(db);
    this.sipRegistrations = new SipRegistrationsRepository(db);
  }

  /** Runs `fn` in a transaction, with repositories bound to it (never the outer database). */
  transaction<T>(fn: (store: VoiceStore) => Promise<T>): Promise<T> {
    return (this.db as { transaction: (f: (tx: DbOrTx) => Promise<T>) => Promise<T> }).transaction((tx) =>
      fn(new VoiceStore(tx)),
    );
  }
}
