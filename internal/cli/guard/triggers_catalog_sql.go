package guard

// guardCatalogTemplate is the part of the guard's script that keeps the catalog
// version: the sequence every DDL statement moves on, the event triggers that move
// it, and guard_stale, which refuses a fenced statement decided on an older version.
// It follows guardSetupTemplate and is filled by the same replacer (guardSetupSQL).
const guardCatalogTemplate = `-- The catalog version: every DDL statement of any session moves it on (the event
-- triggers below), a connector reads it before it reads the catalog, its fenced
-- statements carry it in the marker ("@N"), and the statement trigger refuses one
-- whose version is no longer current (SF005): so no fenced statement runs on a
-- decision made before DDL it cannot see. A sequence, because the trigger reads it
-- with pg_sequence_last_value, which sees the latest value in any snapshot (a
-- repeatable-read transaction would read an old row of a table); it is not
-- transactional, so every DDL transaction also holds the advisory lock
-- {{versionlock}} shared until it ends, and a connector takes it exclusively to read
-- the version: the version it reads never belongs to DDL it cannot see yet.
-- The policy's unqualified names (install_guard records them): a table created later
-- under such a name, in any schema, is one the driver fences by name, so the event
-- trigger guards it too.
CREATE TABLE IF NOT EXISTS sqlfence.guarded_names (
    name         text PRIMARY KEY,
    epoch_column text NOT NULL,
    guard_insert boolean NOT NULL
);
REVOKE ALL ON sqlfence.guarded_names FROM PUBLIC;

CREATE SEQUENCE IF NOT EXISTS sqlfence.catalog_version;
REVOKE ALL ON SEQUENCE sqlfence.catalog_version FROM PUBLIC;
GRANT SELECT ON SEQUENCE sqlfence.catalog_version TO PUBLIC;

CREATE OR REPLACE FUNCTION sqlfence.catalog_changed() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    r record;
    found_one boolean := true;
    rounds int := 0;
BEGIN
    PERFORM pg_advisory_xact_lock_shared({{versionlock}});
    PERFORM nextval('sqlfence.catalog_version');
    IF TG_EVENT <> 'ddl_command_end' THEN
        RETURN;
    END IF;
    -- A partition or inheritance child created or attached under a guarded relation
    -- is guarded like it, in the same transaction: a driver that has not read the
    -- catalog since sends its writes unfenced, and the guard must reject them. Parents
    -- first, so a round finds the children of the relations the previous one guarded.
    WHILE found_one AND rounds < 32 LOOP
        found_one := false;
        rounds := rounds + 1;
        FOR r IN
            WITH RECURSIVE cand (oid) AS (
                SELECT d.objid FROM pg_event_trigger_ddl_commands() d WHERE d.classid = 'pg_class'::regclass
                UNION
                SELECT i.inhrelid FROM pg_inherits i JOIN cand ON i.inhparent = cand.oid)
            SELECT DISTINCT c.oid, c.relkind, {{childmark}} AS mark, (g.tgtype & 4) <> 0 AS ins
            FROM cand JOIN pg_class c ON c.oid = cand.oid
            JOIN pg_inherits i ON i.inhrelid = c.oid
            JOIN pg_trigger g ON g.tgrelid = i.inhparent AND g.tgname = 'sqlfence_guard'
            WHERE c.relkind IN ('r', 'p', 'f')
              AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = 'sqlfence_guard')
        LOOP
            PERFORM sqlfence.guard_statements(r.oid, r.relkind::text, r.mark, r.ins);
            found_one := true;
        END LOOP;
    END LOOP;
    -- A table created under one of the policy's unqualified names, in any schema.
    FOR r IN
        SELECT DISTINCT c.oid, c.relkind, {{childmark}} AS mark, gn.guard_insert AS ins
        FROM pg_event_trigger_ddl_commands() d
        JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
        JOIN pg_namespace ns ON ns.oid = c.relnamespace
        JOIN sqlfence.guarded_names gn ON gn.name = c.relname
        WHERE c.relkind IN ('r', 'p', 'f') AND ns.nspname NOT LIKE 'pg\_temp\_%' AND ns.nspname <> 'sqlfence'
          AND NOT EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid AND t.tgname = 'sqlfence_guard')
    LOOP
        PERFORM sqlfence.guard_statements(r.oid, r.relkind::text, r.mark, r.ins);
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION sqlfence.catalog_changed() FROM PUBLIC;
-- Event triggers need a superuser. Without one the rest of the guard is installed,
-- and a connector under resolve: catalog refuses fenced writes unless its policy sets
-- catalog_refresh (the window in which other sessions' DDL is not seen).
DO $et$
BEGIN
    DROP EVENT TRIGGER IF EXISTS sqlfence_catalog_ddl;
    CREATE EVENT TRIGGER sqlfence_catalog_ddl ON ddl_command_end EXECUTE FUNCTION sqlfence.catalog_changed();
    DROP EVENT TRIGGER IF EXISTS sqlfence_catalog_drop;
    CREATE EVENT TRIGGER sqlfence_catalog_drop ON sql_drop EXECUTE FUNCTION sqlfence.catalog_changed();
    -- ALWAYS: they fire in sessions with session_replication_role = replica too, where
    -- an event trigger created plainly does not, and DDL made there would move no
    -- version. A connector checks that they still are (pgcatalog.Version).
    ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE ALWAYS;
    ALTER EVENT TRIGGER sqlfence_catalog_drop ENABLE ALWAYS;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'sqlfence guard: the catalog version''s event triggers need a superuser and were not created: DDL of other sessions does not reach the driver, which then refuses fenced writes unless the policy sets catalog_refresh';
END
$et$;
SELECT pg_catalog.nextval('sqlfence.catalog_version');

-- guard_stale refuses a fenced statement decided on an older catalog version.
CREATE OR REPLACE FUNCTION sqlfence.guard_stale(op text, tschema name, tname name) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SF005',
        MESSAGE = format('sqlfence guard: %s on %I.%I rejected: the catalog changed since the sqlfence driver decided the statement (catalog version %s, now %s)',
            op, tschema, tname,
            (SELECT substr(w, 2) FROM unnest(string_to_array(split_part(substr(current_query(), {{prefixlen}} + 1), '*/', 1), ' ')) w
             WHERE starts_with(w, '@') LIMIT 1),
            pg_sequence_last_value('sqlfence.catalog_version'::regclass)),
        DETAIL = 'DDL made since (a trigger, rule, partition, view, foreign key or function) may change what the statement writes; the driver decided it without seeing that DDL.',
        HINT = 'Nothing was written. The driver reads the catalog again before its next statement: retry the statement (inside a transaction, roll back and retry the transaction).';
END
$fn$;

`
