/**
 * Opting out through the link of an APPEND_URL message (opt-out-links.ts):
 * the link's token names the message; confirming makes the message's `to`
 * an unsubscriber of the message's project with method URL — unless it is
 * one already (whatever its method), which is then left exactly as it is,
 * also under concurrent confirmations. So confirming twice is harmless.
 */
import { newResourceId } from "../../api/ids.js";
import type { Clock } from "../../clock.js";
import type { Db } from "../../db/client.js";
import { UnsubscribersRepository } from "../unsubscribers/repository.js";
import { hashOptOutToken } from "./opt-out-links.js";
import { MessagesRepository } from "./repository.js";

export interface OptOutTarget {
  projectId: string;
  /** The sender the recipient opts out of (the project's number). */
  from: string;
  /** The recipient. */
  to: string;
}

export class OptOuts {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /** What the link of `token` opts out of; undefined for a token no message has. */
  async lookup(token: string): Promise<OptOutTarget | undefined> {
    const row = await new MessagesRepository(this.db).findByOptOutHash(hashOptOutToken(token));
    if (row === undefined) return undefined;
    return { projectId: row.projectId, from: row.from, to: row.to };
  }

  /** Makes the recipient an unsubscriber (method URL) unless it is one; undefined for an unknown token. */
  async confirm(token: string): Promise<(OptOutTarget & { created: boolean }) | undefined> {
    const target = await this.lookup(token);
    if (target === undefined) return undefined;
    const now = this.clock.now();
    const inserted = await new UnsubscribersRepository(this.db).insertIfAbsent({
      id: newResourceId(),
      projectId: target.projectId,
      phone: target.to,
      unsubscribeMethod: "URL",
      labels: {},
      createTime: now,
      updateTime: now,
    });
    return { ...target, created: inserted !== undefined };
  }
}
