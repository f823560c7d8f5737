/**
 * In-process news of committed changes, per database object: a repository
 * that changed something a cache holds calls `changed(key)` after its
 * transaction committed, and every cache subscribed on the same database
 * object forgets it. (Other processes on the same PostgreSQL hear of it by
 * NOTIFY instead: listen.ts.) `undefined` means "possibly everything".
 */
export class Changes<K = string> {
  private readonly listeners = new Set<(key: K | undefined) => void>();

  /** `key` changed (undefined: possibly everything): call after the change committed. */
  changed(key: K | undefined): void {
    for (const listener of this.listeners) listener(key);
  }

  subscribe(listener: (key: K | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The `Changes` of one kind of thing: one per database object, made at first use. */
export function changesPerDatabase<K = string>(): (db: object) => Changes<K> {
  const byDb = new WeakMap<object, Changes<K>>();
  return (db) => {
    let changes = byDb.get(db);
    if (changes === undefined) {
      changes = new Changes<K>();
      byDb.set(db, changes);
    }
    return changes;
  };
}
