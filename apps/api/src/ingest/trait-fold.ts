// Folds the traits of several events into one object per profile or group, the way
// tidings_merge_traits merges them in PostgreSQL, so a commit sends each row once.
const q = JSON.stringify;

/**
 * Traits folded per key, a later or equal event time winning (the rule of tidings_merge_traits).
 * While every key carries one time, as a single identify's traits do, no per-key times are kept,
 * and the first event's traits object is used as it is until a second one must be merged in.
 */
export class TraitFold {
  /** Null until traits are added; an event's own object until `owned`. */
  private traits: Record<string, unknown> | null = null;
  private owned = false;
  /** Per-key times, or null while every key carries `time`. */
  private times: Record<string, number> | null = null;
  private time = 0;

  add(traits: Record<string, unknown>, time: number) {
    let hasKeys = false;
    for (const _ in traits) {
      hasKeys = true;
      break;
    }
    if (!hasKeys) return;
    if (this.traits === null) {
      this.traits = traits;
      this.time = time;
      return;
    }
    if (!this.owned) {
      this.traits = { ...this.traits };
      this.owned = true;
    }
    if (this.times === null && time === this.time) {
      Object.assign(this.traits, traits);
      return;
    }
    if (this.times === null) {
      this.times = {};
      for (const k in this.traits) this.times[k] = this.time;
    }
    for (const k in traits) {
      const cur = this.times[k];
      if (cur === undefined || time >= cur) {
        this.traits[k] = traits[k];
        this.times[k] = time;
      }
    }
  }

  /** The traits and per-key times as JSON, the newest time (0 when empty), and whether every key carries it. */
  result(): { traits: string; times: string; timeMax: number; uniform: boolean } {
    if (this.traits === null) return { traits: "{}", times: "{}", timeMax: 0, uniform: true };
    if (this.times === null) {
      const time = this.time;
      return {
        traits: q(this.traits),
        times: `{${Object.keys(this.traits)
          .map((k) => `${q(k)}:${time}`)
          .join(",")}}`,
        timeMax: time,
        uniform: true,
      };
    }
    let min = Infinity;
    let max = 0;
    for (const k in this.times) {
      min = Math.min(min, this.times[k]!);
      max = Math.max(max, this.times[k]!);
    }
    return { traits: q(this.traits), times: q(this.times), timeMax: max, uniform: min === max };
  }
}
