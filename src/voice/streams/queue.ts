/**
 * The responses of one stream, waiting for its client: pushed by the call
 * side, pulled by the RPC. Bounded: past `limit` items the oldest droppable
 * one goes (a client that cannot keep up loses old audio, not the process's
 * memory). `end()` finishes the iteration after what is queued; `end(err)`
 * throws `err` after it.
 */
export class ResponseQueue<T> {
  private readonly items: T[] = [];
  private waiting: (() => void) | undefined;
  private ended = false;
  private error: unknown;
  dropped = 0;

  constructor(
    private readonly limit: number,
    private readonly droppable: (item: T) => boolean,
  ) {}

  push(item: T): void {
    if (this.ended) return;
    this.items.push(item);
    if (this.items.length > this.limit) {
      const i = this.items.findIndex(this.droppable);
      if (i >= 0) {
        this.items.splice(i, 1);
        this.dropped++;
      }
    }
    this.wake();
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.wake();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.ended) {
        if (this.error !== undefined) throw this.error;
        return;
      }
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
    }
  }
}
