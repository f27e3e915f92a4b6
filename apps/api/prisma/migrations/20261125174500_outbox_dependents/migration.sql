-- ------------------------------------------------------------------------------------------
-- tidings_outbox_needed(workspace, keys): whether anything depends on a change with these outbox
-- keys (src/outbox): a segment whose depends_on meets them (any segment when the change is `*`,
-- a linked identity; a segment whose keys are not known yet, depends_on empty, takes every
-- change), or a running journey whose entry event is among them. Ingestion writes its
-- outbox row, and wakes the engine, only then.
--
-- It takes the workspace's dependents lock shared (space 0x74646470, DEPENDENTS_LOCK_SPACE in
-- src/outbox/index.ts) before it reads: a transaction changing who depends (a segment's
-- definition and depends_on, a journey's status or version) holds it exclusively until it
-- commits. VOLATILE plpgsql, so the read takes its snapshot after the lock is granted, not when
-- the calling statement began: every commit either sees the change or finishes before it.
-- ------------------------------------------------------------------------------------------
CREATE FUNCTION "tidings_outbox_needed"(ws uuid, keys text[])
RETURNS boolean
LANGUAGE plpgsql
VOLATILE
AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(1952736368, hashtext(ws::text));
  RETURN EXISTS (
      SELECT 1 FROM segments s
      WHERE s.workspace_id = ws
        AND (s.depends_on && keys OR '*' = ANY (s.depends_on) OR '*' = ANY (keys) OR cardinality(s.depends_on) = 0))
    OR EXISTS (
      SELECT 1 FROM journeys j
      WHERE j.workspace_id = ws AND j.status = 'Running'
        AND j.definition -> 'entryNode' ->> 'type' = 'EventEntryNode'
        AND 'e:' || (j.definition -> 'entryNode' ->> 'event') = ANY (keys));
END;
$$;
