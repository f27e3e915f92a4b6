// Migrations are expand/contract (PRODUCT §11, docs/operations.md): no committed migration
// renames or drops what replicas of the previous release still read, or makes their writes fail,
// except as a contract step whose object has been unused since an earlier migration.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readMigrations } from "../../src/db/migrate.ts";
import { breakingStatements, expandContractViolations, type MigrationFile, schemaObjects } from "./expand-contract.ts";

/** Migrations written before the rule, by directory name, with why they are let be. */
const HISTORIC: Record<string, string> = {
  "20261123002706_events_identity_id":
    "renamed events.profile_id to identity_id in one step: replicas of the previous release failed on every ingestion " +
    "(column profile_id does not exist) until they were replaced — the incident this check exists for",
};

const schema = schemaObjects(readFileSync(new URL("../../prisma/schema.prisma", import.meta.url), "utf8"));

describe("the committed migrations", () => {
  it("follow expand/contract", async () => {
    const migrations = await readMigrations();
    expect(migrations.length).toBeGreaterThan(5);
    expect(expandContractViolations(migrations, schema, new Set(Object.keys(HISTORIC)))).toEqual([]);
  });

  it("let be only historic migrations that do break the rule (the list cannot go stale)", async () => {
    const migrations = await readMigrations();
    for (const name of Object.keys(HISTORIC)) {
      const migration = migrations.find((m) => m.name === name);
      expect(migration, `${name} is not a migration`).toBeDefined();
      expect(breakingStatements(migration!)).not.toEqual([]);
    }
  });
});

describe("the rule, on sample migrations", () => {
  const base: MigrationFile[] = [
    { name: "20990101000000_first", sql: 'CREATE TABLE "events" ("workspace_id" UUID NOT NULL, "message_id" TEXT NOT NULL);' },
    { name: "20990102000000_second", sql: 'ALTER TABLE "events" ADD COLUMN "extra" TEXT;' },
  ];
  const check = (sql: string, name = "20990103000000_sample") => expandContractViolations([...base, { name, sql }], schema, new Set());

  it("rejects the identity_id rename as it was written", () => {
    const sql = readFileSync(new URL("../../prisma/migrations/20261123002706_events_identity_id/migration.sql", import.meta.url), "utf8");
    expect(check(sql)).toEqual([
      expect.stringMatching(/^20990103000000_sample renames events\.profile_id, which replicas of the previous release may still use/),
    ]);
  });

  it("rejects renames, drops, type changes and NOT NULL writes the previous release would trip over", () => {
    expect(
      check(`ALTER TABLE "events" RENAME COLUMN "message_id" TO "msg";
        ALTER TABLE public.events RENAME extra TO extra2;
        ALTER TABLE "profiles" RENAME TO "people";
        DROP TABLE IF EXISTS "groups", "send_pacing" CASCADE;
        ALTER TABLE "deliveries" DROP COLUMN "context", ALTER COLUMN "attempts" SET DATA TYPE BIGINT, ALTER "reason" TYPE varchar(10);
        ALTER TABLE "journeys" ADD COLUMN "owner" TEXT NOT NULL, ADD COLUMN "rank" INT NOT NULL DEFAULT 0, ALTER COLUMN "draft" SET NOT NULL;`).map(
        (p) => p.split(",")[0],
      ),
    ).toEqual([
      "20990103000000_sample renames events.message_id",
      "20990103000000_sample renames events.extra",
      "20990103000000_sample renames profiles",
      "20990103000000_sample drops groups",
      "20990103000000_sample drops send_pacing",
      "20990103000000_sample drops deliveries.context",
      "20990103000000_sample changes the type of deliveries.attempts",
      "20990103000000_sample changes the type of deliveries.reason",
      "20990103000000_sample adds NOT NULL without a default to journeys.owner",
      "20990103000000_sample sets NOT NULL on journeys.draft",
    ]);
  });

  it("accepts expand steps, index renames, constraints, and text inside comments, strings and function bodies", () => {
    expect(
      check(`-- DROP TABLE "events" would break replicas
        ALTER TABLE "events" ADD COLUMN "source" TEXT, ADD COLUMN "n" INT NOT NULL DEFAULT 0, ADD CONSTRAINT "c" CHECK ("n" >= 0);
        ALTER INDEX "events_a_idx" RENAME TO "events_b_idx";
        ALTER TABLE "events" DROP CONSTRAINT "c", RENAME CONSTRAINT "d" TO "e", ALTER COLUMN "source" DROP NOT NULL;
        COMMENT ON TABLE "events" IS 'never DROP TABLE events; ALTER TABLE events RENAME TO x';
        CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN ALTER TABLE events DROP COLUMN x; END $$;
        /* ALTER TABLE "events" RENAME COLUMN "a" TO "b"; */`),
    ).toEqual([]);
  });

  it("accepts changes to a table the same migration creates, and a table replaced in place (partitioning)", () => {
    expect(
      check(`CREATE TABLE "scratch" ("workspace_id" UUID NOT NULL, "a" TEXT);
        ALTER TABLE "scratch" RENAME COLUMN "a" TO "b", ADD COLUMN "c" TEXT NOT NULL;
        DROP TABLE "scratch";
        CREATE TABLE "events_partitioned" (LIKE "events") PARTITION BY RANGE ("event_time");
        INSERT INTO "events_partitioned" SELECT * FROM "events";
        ALTER TABLE "events" RENAME TO "events_unpartitioned";
        ALTER TABLE "events_partitioned" RENAME TO "events";
        DROP TABLE "events_unpartitioned";`),
    ).toEqual([]);
    // Renamed away and never replaced, it is gone for the previous release.
    expect(check(`ALTER TABLE "events" RENAME TO "events_unpartitioned";`)).toEqual([
      expect.stringMatching(/^20990103000000_sample renames events, which replicas/),
    ]);
  });

  it("accepts a contract step naming an earlier migration, for an object the schema no longer maps", () => {
    expect(
      check(`-- contract: events.extra unused since 20990102000000_second
        ALTER TABLE "events" DROP COLUMN "extra";
        -- contract: legacy_table unused since 20990101000000_first
        DROP TABLE "legacy_table";`),
    ).toEqual([]);
  });

  it("rejects a contract comment naming a later or unknown migration, or an object the schema still maps", () => {
    expect(
      check(`-- contract: events.extra unused since 20990104000000_later
        ALTER TABLE "events" DROP COLUMN "extra";
        -- contract: events.message_id unused since 20990101000000_first
        ALTER TABLE "events" DROP COLUMN "message_id";
        -- contract: journeys unused since 20990101000000_first
        DROP TABLE "journeys";`),
    ).toEqual([
      "20990103000000_sample drops events.extra: its contract comment names 20990104000000_later, which is not an earlier migration",
      "20990103000000_sample drops events.message_id: its contract comment says it is unused, but prisma/schema.prisma still maps events.message_id",
      "20990103000000_sample drops journeys: its contract comment says it is unused, but prisma/schema.prisma still maps journeys",
    ]);
  });
});
