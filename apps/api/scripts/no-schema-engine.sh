#!/bin/sh
# Stand-in for Prisma's native schema engine, which cannot be downloaded here.
#
# The prisma CLI refuses to start (even for `prisma generate`, which never runs the
# engine) unless PRISMA_SCHEMA_ENGINE_BINARY points at an existing file. This stub
# satisfies that check. If anything actually invokes it (`prisma migrate …`,
# `prisma db …`), fail loudly instead of pretending to succeed: a no-op such as
# /bin/true would make `migrate deploy` report success while applying nothing.
#
# Migrations are generated with `pnpm --filter @tidings/api migration:new <name>`
# (the wasm schema engine, see scripts/schema-engine.ts).
echo "no-schema-engine.sh: the native Prisma schema engine is not available on this machine." >&2
echo "  invoked as: $0 $*" >&2
echo "  Use 'pnpm --filter @tidings/api migration:new <name>' to create migrations;" >&2
echo "  they are applied at start by the server's migration runner." >&2
exit 1
