package guard

import (
	"strconv"
	"strings"

	"github.com/sqlfence/sqlfence/internal/guardmark"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/sqlident"
)

// CarriesTag is in the row trigger's function: a connector fences the writes the
// server makes on a statement's behalf (triggers, foreign-key actions, rules,
// functions) only where the guard installed carries it (pgcatalog.Version); it
// refuses those statements under an older guard.
const CarriesTag = pgcatalog.GuardCarriesTag

// guardSetupSQL creates the guard's schema, log table and functions. It is
// idempotent, and installs no trigger: install_guard does, per protected table,
// finding a table's partitions and inheritance children with pgcatalog.RelationsSQL
// (the query resolve: catalog and audit use), in PL/pgSQL, so that the printed script
// runs with psql alone. Its parts, in the script's order: the schema and the override
// log (guardSetupTemplate), the catalog version and its event triggers
// (guardCatalogTemplate), the statement trigger and the override
// (guardStatementTemplate), the row trigger (guardRowTemplate).
var guardSetupSQL = strings.NewReplacer(
	"{{relations}}", pgcatalog.RelationsSQL("p_schema", "p_name", "p_epoch_column"),
	"{{mark}}", guardmark.NameSQL("rel.name"),
	"{{parentmark}}", guardmark.NameSQL("c.relname"),
	"{{childmark}}", guardmark.NameSQL("c.relname"),
	"{{upmark}}", guardmark.NameSQL("c.relname"),
	"{{prefix}}", sqlident.Literal(guardmark.Prefix),
	"{{prefixlen}}", strconv.Itoa(len(guardmark.Prefix)),
	"{{versionprefix}}", sqlident.Literal(guardmark.Prefix+guardmark.VersionMark),
	"{{carryprefix}}", sqlident.Literal(guardmark.CarryPrefix),
	"{{carried}}", sqlident.Literal(guardmark.CarriedMark),
	"{{claimmark}}", sqlident.Literal(guardmark.ClaimMark),
	"{{strict}}", sqlident.Literal(string(guardmark.Strict)),
	"{{repeatable}}", sqlident.Literal(string(guardmark.Repeatable)),
	"{{claimcheck}}", sqlident.Literal(string(guardmark.ClaimCheck)),
	"{{carries}}", CarriesTag,
	"{{versionlock}}", strconv.Itoa(pgcatalog.VersionLock),
	"{{versionmark}}", sqlident.Literal(guardmark.VersionMark),
).Replace(guardSetupTemplate + guardCatalogTemplate + guardStatementTemplate + guardRowTemplate)

const guardSetupTemplate = `
CREATE SCHEMA IF NOT EXISTS sqlfence;
-- Every role's writes run the guard's trigger, which calls into this schema (and
-- operators call sqlfence.override); the log table stays closed.
GRANT USAGE ON SCHEMA sqlfence TO PUBLIC;

-- One row per statement that ran under an operator override, per table.
CREATE TABLE IF NOT EXISTS sqlfence.override_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    xact        xid8 NOT NULL DEFAULT pg_current_xact_id(),
    username    name NOT NULL DEFAULT session_user,
    application text NOT NULL DEFAULT current_setting('application_name'),
    client_addr inet DEFAULT inet_client_addr(),
    relation    text NOT NULL,
    operation   text NOT NULL,
    reason      text NOT NULL
);
REVOKE ALL ON sqlfence.override_log FROM PUBLIC;

`

// guardStatementTemplate: the override, the statement trigger that lets through only
// what the driver fenced, and the epoch row trigger, with their installer.
const guardStatementTemplate = `-- sqlfence.override(reason) allows writes to guarded tables for the rest of the
-- transaction. The override is bound to the transaction's id, so a session-level SET
-- cannot leave it on for later transactions of a pooled connection.
CREATE OR REPLACE FUNCTION sqlfence.override(reason text) RETURNS text
LANGUAGE plpgsql AS $fn$
BEGIN
    IF reason IS NULL OR pg_catalog.length(pg_catalog.btrim(reason)) < 8 THEN
        RAISE EXCEPTION USING ERRCODE = 'SF003',
            MESSAGE = 'sqlfence.override needs a reason of at least 8 characters',
            HINT = 'Say why the guard may be bypassed, e.g. SELECT sqlfence.override(''restore inventory after INC-1234'');';
    END IF;
    -- No SET clause on this function: set_config(..., true) must outlive the call.
    PERFORM pg_catalog.set_config('sqlfence.override', pg_catalog.btrim(reason), true);
    PERFORM pg_catalog.set_config('sqlfence.override_xact', pg_catalog.pg_current_xact_id()::text, true);
    RAISE LOG 'sqlfence guard override started by % (transaction %): %',
        session_user, pg_catalog.pg_current_xact_id(), pg_catalog.btrim(reason);
    RAISE NOTICE 'sqlfence guard override active until the end of this transaction: %', pg_catalog.btrim(reason);
    RETURN pg_catalog.btrim(reason);
END
$fn$;

-- The active override's reason, or NULL.
CREATE OR REPLACE FUNCTION sqlfence.active_override() RETURNS text
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    reason text := nullif(current_setting('sqlfence.override', true), '');
BEGIN
    IF reason IS NULL
       OR current_setting('sqlfence.override_xact', true) IS DISTINCT FROM pg_current_xact_id()::text THEN
        RETURN NULL;
    END IF;
    RETURN reason;
END
$fn$;

-- Statement trigger: the write must be one a statement of the driver fenced, or run
-- under an override. TG_ARGV[0] is the relation's name as the driver's marker writes
-- it. The driver's fenced statements start with the marker, naming what they fenced;
-- a write made by a trigger or a foreign-key action runs at trigger depth 2 or more,
-- one made by a function, procedure or DO block has their frames in PG_CONTEXT, and a
-- rule's write is to a relation the marker does not name.
--
-- It runs before every write of the driver, so it is cheap: no SECURITY DEFINER, no
-- SET clause (changing search_path on each call costs more than the checks), every
-- name schema-qualified so that the session's search_path cannot change what it
-- calls. Everything else is in sqlfence.guard_reject.
CREATE OR REPLACE FUNCTION sqlfence.guard() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
    ctx pg_catalog.text;
    words pg_catalog.text[];
BEGIN
    -- The marker names what the driver fenced and starts, from a connector under
    -- resolve: catalog, with "@N": the catalog version the statement was decided on,
    -- which must still be the current one — DDL since may change what the statement
    -- writes (sqlfence.catalog_version). plpgsql prepares each expression the first
    -- time a transaction evaluates it, all of it (with autocommit: once per
    -- statement), so that the cost follows the size of the expressions evaluated.
    -- Hence two: a statement that fenced this relation alone, the common case,
    -- passes the first, whose marker test is one prefix (the prefix, the version,
    -- this name, then */); the second takes the marker's words apart.
    GET DIAGNOSTICS ctx = PG_CONTEXT;
    IF (pg_catalog.starts_with(pg_catalog.current_query(), pg_catalog.textcat(pg_catalog.textcat({{prefix}}, TG_ARGV[0]), '*/'))
        OR pg_catalog.starts_with(pg_catalog.current_query(), pg_catalog.textcat(pg_catalog.textcat(pg_catalog.textcat(pg_catalog.textcat(
           {{versionprefix}}, pg_catalog.pg_sequence_last_value('sqlfence.catalog_version'::pg_catalog.regclass)::pg_catalog.text),
           ' '), TG_ARGV[0]), '*/')))
       AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
       AND pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0
       AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on' THEN
        RETURN NULL;
    END IF;
    IF pg_catalog.starts_with(pg_catalog.current_query(), {{prefix}})
       AND NOT pg_catalog.starts_with(pg_catalog.current_query(), {{carryprefix}})
       AND pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
       AND pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0
       AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on'
       AND TG_ARGV[0] OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array(pg_catalog.split_part(
           pg_catalog.substr(pg_catalog.current_query(), {{prefixlen}} + 1), '*/', 1), ' '))
       AND (NOT pg_catalog.starts_with(pg_catalog.current_query(), {{versionprefix}})
            OR pg_catalog.starts_with(pg_catalog.current_query(), pg_catalog.textcat(pg_catalog.textcat({{versionprefix}},
               pg_catalog.pg_sequence_last_value('sqlfence.catalog_version'::pg_catalog.regclass)::pg_catalog.text), ' '))) THEN
        RETURN NULL;
    END IF;
    -- The carried form ("=E @N names +name:checks ..."): a statement that carries its
    -- epoch for the writes the server makes on its behalf. Its catalog version (the
    -- second word, always there) must be current; then the statement's own write passes
    -- as above, and a write of any depth, by a trigger, a foreign-key action, a rule
    -- or a function, passes when the marker carries the epoch for this relation: the
    -- row trigger sqlfence.guard_row compares and stamps each of its rows. TRUNCATE
    -- has no rows to compare.
    IF pg_catalog.starts_with(pg_catalog.current_query(), {{carryprefix}})
       AND pg_catalog.current_setting('sqlfence.fenced', true) OPERATOR(pg_catalog.=) 'on' THEN
        words := pg_catalog.string_to_array(pg_catalog.split_part(
            pg_catalog.substr(pg_catalog.current_query(), {{prefixlen}} + 1), '*/', 1), ' ');
        IF words[2] OPERATOR(pg_catalog.=) pg_catalog.textcat({{versionmark}},
               pg_catalog.pg_sequence_last_value('sqlfence.catalog_version'::pg_catalog.regclass)::pg_catalog.text)
           AND (pg_catalog.pg_trigger_depth() OPERATOR(pg_catalog.=) 1
                AND pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.=) 0
                AND TG_ARGV[0] OPERATOR(pg_catalog.=) ANY (words)
                OR TG_OP OPERATOR(pg_catalog.<>) 'TRUNCATE'
                AND pg_catalog.textcat(pg_catalog.textcat({{carried}}, TG_ARGV[0]), ':') OPERATOR(pg_catalog.=) ANY (
                    SELECT pg_catalog.substr(w, 1, pg_catalog.length(TG_ARGV[0]) OPERATOR(pg_catalog.+) 2)
                    FROM pg_catalog.unnest(words) w)) THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM sqlfence.guard_reject(TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME,
        pg_catalog.strpos(ctx, E'\n') OPERATOR(pg_catalog.>) 0);
    RETURN NULL;
END
$fn$;

-- guard_reject lets a write the statement trigger did not recognize through under an
-- active override, and logs it; otherwise it fails, saying why. nested: the write was
-- made inside a function, procedure or DO block.
CREATE OR REPLACE FUNCTION sqlfence.guard_reject(op text, tschema name, tname name, nested boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    q text := current_query();
    rel text := format('%I.%I', tschema, tname);
    reason text;
    why text;
    hint text := 'For an operator repair, run SELECT sqlfence.override(''<why>''); first, in the same transaction; it is logged in sqlfence.override_log.';
    driver boolean := coalesce(current_setting('sqlfence.fenced', true) = 'on', false);
BEGIN
    IF pg_trigger_depth() < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'SF003', MESSAGE = 'sqlfence.guard_reject is for the guard''s trigger only';
    END IF;
    IF coalesce(current_setting('sqlfence.override', true), '') <> '' THEN
        reason := sqlfence.active_override();
        IF reason IS NOT NULL THEN
            INSERT INTO sqlfence.override_log (relation, operation, reason) VALUES (rel, op, reason);
            RAISE LOG 'sqlfence guard override: % on % by % (transaction %): %',
                op, rel, session_user, pg_current_xact_id(), reason;
            RAISE NOTICE 'sqlfence guard: % on % allowed by the override, and logged: %', op, rel, reason;
            RETURN;
        END IF;
    END IF;
    -- A statement the driver fenced on a catalog version DDL has moved on since.
    IF driver AND pg_trigger_depth() = 1 AND NOT nested AND starts_with(q, {{versionprefix}})
       AND NOT starts_with(q, {{versionprefix}} || pg_sequence_last_value('sqlfence.catalog_version'::regclass)::text || ' ') THEN
        PERFORM sqlfence.guard_stale(op, tschema, tname);
    END IF;
    IF driver AND starts_with(q, {{carryprefix}})
       AND split_part(split_part(substr(q, {{prefixlen}} + 1), '*/', 1), ' ', 2) <> {{versionmark}} || pg_sequence_last_value('sqlfence.catalog_version'::regclass)::text THEN
        PERFORM sqlfence.guard_stale(op, tschema, tname);
    END IF;
    IF NOT driver THEN
        why := 'the session did not come through the sqlfence driver';
        hint := 'Write through the sqlfence driver under an epoch. ' || hint;
    ELSIF starts_with(q, {{carryprefix}}) AND op = 'TRUNCATE' THEN
        why := 'the statement carries its epoch for the writes the server makes on its behalf, but a TRUNCATE has no rows to compare with it';
        hint := format('Do not truncate %s from a trigger or function; delete its rows with a statement of its own under an epoch. ', rel) || hint;
    ELSIF starts_with(q, {{carryprefix}}) THEN
        why := format('the statement carries its epoch for the writes the server makes on its behalf, but not for %s: the sqlfence driver did not see that the statement writes it (a trigger, rule, foreign key or function made since it read the catalog, or a partition or child reached through another name)', rel);
        hint := 'The driver reads the catalog again before its next statement: retry the statement. ' || hint;
    ELSIF pg_trigger_depth() > 1 THEN
        why := format('the write was made by a trigger or a foreign-key action (trigger depth %s), where no epoch reaches', pg_trigger_depth() - 1);
        hint := format('Write %s with a statement of its own through the sqlfence driver under an epoch: make a foreign key into it NO ACTION or RESTRICT and write the rows it would cascade to explicitly; do not write it from a trigger. ', rel) || hint;
    ELSIF nested THEN
        why := 'the write was made inside a function, procedure or DO block, where no epoch reaches';
        hint := format('Write %s with a statement of its own through the sqlfence driver under an epoch, not from a function, procedure or DO block. ', rel) || hint;
    ELSIF starts_with(q, {{prefix}}) THEN
        why := format('the statement was fenced by the sqlfence driver, but not for %s: the write comes from a rule, or through a relation the driver did not fence as %s', rel, rel);
        hint := format('Write %s with a statement of its own through the sqlfence driver under an epoch, and drop the rule that writes it; with resolve: catalog the driver refuses statements that fire such rules. ', rel) || hint;
    ELSE
        why := 'the statement was not fenced by the sqlfence driver: it was sent with sqlfence.Unfenced, on a raw connection or in shadow mode, or the driver did not see it as a write to a protected table (a rule of another table, or a view, partition or parent the driver does not know)';
        hint := format('Write %s through the sqlfence driver under an epoch (sqlfence.WithEpoch), naming the table or, with resolve: catalog, its views and partitions. ', rel) || hint;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SF001',
        MESSAGE = format('sqlfence guard: %s on %s rejected: %s', op, rel, why),
        DETAIL = format('%s is protected by fencing tokens: a write that sqlfence did not fence carries no epoch and can overwrite rows a newer claim wrote.', rel)
            || CASE WHEN coalesce(current_setting('sqlfence.override', true), '') <> ''
                    THEN ' sqlfence.override is set, but not by sqlfence.override() in this transaction.' ELSE '' END
            || CASE WHEN driver THEN format(' The statement: %s', left(q, 300)) ELSE '' END,
        HINT = hint;
END
$fn$;

-- Row trigger, fired only when an UPDATE may lower the epoch (see its WHEN clause). It
-- runs AFTER the update so that it sees the row as every BEFORE trigger left it,
-- whatever their names (BEFORE triggers run in name order). Its WHEN clause is one
-- comparison, (NEW < OLD) IS NOT FALSE, because the executor reads it back from its
-- stored text for every UPDATE statement: that also fires for a row whose old epoch
-- is NULL, and raising an epoch from NULL is no step backwards.
CREATE OR REPLACE FUNCTION sqlfence.guard_epoch() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF (to_jsonb(OLD) ->> TG_ARGV[0]) IS NULL THEN
        RETURN NEW;
    END IF;
    IF sqlfence.active_override() IS NOT NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'SF002',
        MESSAGE = format('sqlfence guard: UPDATE on %I.%I would move %I backwards, from %s to %s',
            TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_ARGV[0],
            to_jsonb(OLD) ->> TG_ARGV[0], coalesce(to_jsonb(NEW) ->> TG_ARGV[0], 'NULL')),
        DETAIL = 'A fenced write stores its own epoch, which is above the one it replaces: a row''s epoch never decreases, and lowering it lets a superseded worker write the row again.',
        HINT = 'To clear epochs above the claim counter, move the counter up instead (sqlfence audit --fix). To lower it anyway, run SELECT sqlfence.override(''<why>''); first, in the same transaction.';
END
$fn$;

-- guard_always makes the guard's triggers on rel fire in every replication role: a
-- trigger created plainly fires only where session_replication_role is origin or
-- local, and a role or database default of replica would switch it off in every
-- session, the driver's included. A partition's cloned row trigger too.
CREATE OR REPLACE FUNCTION sqlfence.guard_always(rel oid) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    t name;
BEGIN
    FOR t IN SELECT g.tgname FROM pg_trigger g
             WHERE g.tgrelid = rel AND g.tgname IN ('sqlfence_guard', 'sqlfence_guard_epoch', 'sqlfence_guard_row') AND g.tgenabled <> 'A'
             ORDER BY 1
    LOOP
        EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', rel::regclass, t);
    END LOOP;
END
$fn$;

-- install_guard puts both triggers on a protected table (every schema's, when schema
-- is NULL) and on its partitions and inheritance children, the statement trigger on
-- their parents, and returns what it guarded.
CREATE OR REPLACE FUNCTION sqlfence.install_guard(p_schema text, p_name text, p_epoch_column text, p_guard_insert boolean)
RETURNS TABLE (relation text, kind text)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    r record;
    n int := 0;
    guarded oid[] := '{}';
BEGIN
    FOR r IN
        SELECT rel.oid::oid AS oid, rel.depth, rel.relkind, nullif(rel.epoch_type, '') AS epoch_type, {{mark}} AS mark
        FROM ({{relations}}) rel (oid, schema, name, relkind, depth, epoch_type, epoch_not_null)
        WHERE rel.relkind <> 'v'
        ORDER BY rel.depth, rel.oid
    LOOP
        IF r.epoch_type IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'SF004',
                MESSAGE = format('sqlfence guard: %s has no epoch column %I', r.oid::regclass, p_epoch_column),
                HINT = format('ALTER TABLE %s ADD COLUMN %I bigint NOT NULL DEFAULT 0;', r.oid::regclass, p_epoch_column);
        END IF;
        PERFORM sqlfence.guard_statements(r.oid, r.relkind::text, r.mark, p_guard_insert);
        -- A partition already has the row trigger when it was cloned from its parent's.
        IF NOT EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgname = 'sqlfence_guard_epoch' AND g.tgparentid <> 0) THEN
            IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = r.oid AND g.tgname = 'sqlfence_guard_epoch') THEN
                EXECUTE format('DROP TRIGGER sqlfence_guard_epoch ON %s', r.oid::regclass);
            END IF;
            EXECUTE format('CREATE TRIGGER sqlfence_guard_epoch AFTER UPDATE ON %1$s FOR EACH ROW '
                'WHEN ((NEW.%2$I < OLD.%2$I) IS NOT FALSE) '
                'EXECUTE FUNCTION sqlfence.guard_epoch(%3$L)', r.oid::regclass, p_epoch_column, p_epoch_column);
        END IF;
        IF r.relkind <> 'p' THEN
            PERFORM sqlfence.guard_rows(r.oid, p_epoch_column, ARRAY(
                WITH RECURSIVE up (oid, d) AS (
                    SELECT r.oid, 0
                    UNION
                    SELECT i.inhparent, up.d + 1 FROM pg_inherits i JOIN up ON i.inhrelid = up.oid)
                SELECT {{upmark}} FROM up JOIN pg_class c ON c.oid = up.oid ORDER BY up.d));
        END IF;
        PERFORM sqlfence.guard_always(r.oid);
        relation := r.oid::regclass::text;
        kind := CASE WHEN r.depth > 0 THEN 'partition or child ' ELSE '' END
            || CASE r.relkind WHEN 'p' THEN 'partitioned table' WHEN 'f' THEN 'foreign table' ELSE 'table' END;
        n := n + 1;
        guarded := guarded || r.oid;
        RETURN NEXT;
    END LOOP;
    -- Their parents: a write to a parent fires the parent's statement triggers, not
    -- those of the partitions and children whose rows it reaches. The driver fences it
    -- only with resolve: catalog, as the parent, and its marker then names the parent.
    FOR r IN
        WITH RECURSIVE up (oid) AS (
            SELECT i.inhparent FROM pg_inherits i WHERE i.inhrelid = ANY (guarded)
            UNION
            SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.oid)
        SELECT up.oid, c.relkind, {{parentmark}} AS mark
        FROM up JOIN pg_class c ON c.oid = up.oid
        WHERE NOT up.oid = ANY (guarded)
        ORDER BY up.oid
    LOOP
        PERFORM sqlfence.guard_statements(r.oid, r.relkind::text, r.mark, p_guard_insert);
        relation := r.oid::regclass::text;
        kind := 'parent of a protected table';
        RETURN NEXT;
    END LOOP;
    IF p_schema IS NULL OR p_schema = '' THEN
        INSERT INTO sqlfence.guarded_names VALUES (p_name, p_epoch_column, p_guard_insert)
        ON CONFLICT (name) DO UPDATE SET epoch_column = EXCLUDED.epoch_column, guard_insert = EXCLUDED.guard_insert;
    END IF;
    IF n = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'SF004',
            MESSAGE = format('sqlfence guard: the protected table %s does not exist in database %s',
                CASE WHEN p_schema IS NULL THEN quote_ident(p_name) ELSE format('%I.%I', p_schema, p_name) END,
                current_database()),
            HINT = 'Create the table first (then run the guard again), or remove it from the policy.';
    END IF;
END
$fn$;
`

const guardDropSQL = `DROP EVENT TRIGGER IF EXISTS sqlfence_catalog_ddl;
DROP EVENT TRIGGER IF EXISTS sqlfence_catalog_drop;
DROP FUNCTION IF EXISTS sqlfence.guard() CASCADE;        -- and every sqlfence_guard trigger
DROP FUNCTION IF EXISTS sqlfence.guard_epoch() CASCADE;  -- and every sqlfence_guard_epoch trigger
DROP FUNCTION IF EXISTS sqlfence.guard_row() CASCADE;    -- and every sqlfence_guard_row trigger
DROP FUNCTION IF EXISTS sqlfence.guard_rows(oid, text, text[]);
DROP FUNCTION IF EXISTS sqlfence.install_guard(text, text, text, boolean);
DROP FUNCTION IF EXISTS sqlfence.guard_statements(oid, text, text, boolean);
DROP FUNCTION IF EXISTS sqlfence.guard_always(oid);
DROP FUNCTION IF EXISTS sqlfence.guard_reject(text, name, name, boolean);
DROP FUNCTION IF EXISTS sqlfence.override(text);
DROP FUNCTION IF EXISTS sqlfence.active_override();
DROP FUNCTION IF EXISTS sqlfence.guard_stale(text, name, name);
DROP FUNCTION IF EXISTS sqlfence.catalog_changed();
DROP SEQUENCE IF EXISTS sqlfence.catalog_version;
DROP TABLE IF EXISTS sqlfence.guarded_names;
`

const guardDropLogSQL = `DROP TABLE IF EXISTS sqlfence.override_log;
DO $drop$
BEGIN
    DROP SCHEMA IF EXISTS sqlfence;
EXCEPTION WHEN dependent_objects_still_exist THEN
    RAISE NOTICE 'schema sqlfence kept: it holds objects the guard did not create';
END
$drop$;
`
