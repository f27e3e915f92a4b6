// The reference server of the identify benchmark: bare Fastify that parses JSON and answers 204.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.post("/api/public/apps/identify", async (_request, reply) => reply.status(204).send());
const address = await app.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`${address}\n`);
