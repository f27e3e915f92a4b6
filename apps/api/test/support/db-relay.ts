// A TCP relay to a test PostgreSQL, for the database's bad days: connections that take long to be
// accepted (`connectDelayMs`), or a database that goes away (`down`: every connection cut, new ones
// refused) and comes back on the same port (`up`).
import net from "node:net";

export async function dbRelay(url: string, o: { connectDelayMs?: number } = {}) {
  const target = new URL(url);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.pause();
    // A client gone while it waits (or cut by `down`) is never connected upstream.
    client.on("error", () => client.destroy()).on("close", () => sockets.delete(client));
    setTimeout(() => {
      if (client.destroyed) return;
      const upstream = net.connect(Number(target.port), target.hostname, () => client.resume());
      sockets.add(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on("error", end).on("close", end);
      upstream.on("error", end).on("close", end);
    }, o.connectDelayMs ?? 0);
  });
  const listen = (port: number) => new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  const cut = () => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => server.close(r));
  };
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const relayed = new URL(url);
  relayed.hostname = "127.0.0.1";
  relayed.port = String(port);
  return {
    /** `url` through the relay. */
    url: relayed.toString(),
    /** Cuts every connection and refuses new ones. */
    down: cut,
    /** Accepts connections again, on the same port. */
    up: () => listen(port),
    close: cut,
  };
}
