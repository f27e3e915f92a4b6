// A value computed once per key: the zones and window states a chunk of messages shares.

/** What `map` holds for `key`, made by `make` (and kept) the first time it is asked for. */
export function remember<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  if (map.has(key)) return map.get(key) as V;
  const value = make();
  map.set(key, value);
  return value;
}
