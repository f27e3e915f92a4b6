// Values read at most once per `ttlMs` per key, shared by concurrent readers; a failed read is
// not kept (the next reader tries again), and the oldest key goes beyond `maxKeys`.
export class ReadCache<T> {
  private entries = new Map<string, { at: number; value: Promise<T> }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxKeys = 1000,
  ) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < this.ttlMs) return hit.value;
    const value = load();
    this.entries.set(key, { at: Date.now(), value });
    value.catch(() => {
      if (this.entries.get(key)?.value === value) this.entries.delete(key);
    });
    if (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value!);
    return value;
  }
}
