package guard

// guardRowTemplate is the part of the guard's script that fences the writes the
// server makes for a fenced statement: the row trigger that compares each such row
// with the epoch the statement carries and stamps it, and its installer. It is
// appended to guardSetupTemplate and filled by the same replacer (guardSetupSQL).
const guardRowTemplate = `
-- Row trigger, BEFORE INSERT, UPDATE and DELETE on every protected table (not on a
-- partitioned parent: its partitions carry their own), fired only for a statement in
-- the carried form (its WHEN clause: one prefix test). The statement trigger has let
-- the write through: the driver's own write, or one the server makes for the statement
-- and for which the marker carries the epoch. A carried relation's rows are compared
-- with the epoch, as the driver's fence compares the rows it writes — strict: the
-- row's epoch must be below it, repeatable: not above it — and the claim is checked
-- when the marker says so; a stale row fails the whole statement (SQLSTATE SF101,
-- SF110 or SF102, the driver's fence codes, which it reports as such), and every row
-- written is stamped with the epoch. TG_ARGV[0] is the epoch column, the rest the
-- names the driver's marker may give this relation under: its own, then those of its
-- parents.
CREATE OR REPLACE FUNCTION sqlfence.guard_row() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
-- {{carries}}
DECLARE
    words text[] := string_to_array(split_part(substr(current_query(), {{prefixlen}} + 1), '*/', 1), ' ');
    checks text;
    epoch bigint;
    stored bigint;
    claim text[];
    claim_rel regclass;
    claim_key text;
    claim_col text;
    key_type text;
    claim_epoch bigint;
    i int;
BEGIN
    FOR i IN 1 .. TG_NARGS - 1 LOOP
        SELECT substr(w, length(TG_ARGV[i]) + 3) INTO checks FROM unnest(words) w
        WHERE starts_with(w, {{carried}} || TG_ARGV[i] || ':') LIMIT 1;
        EXIT WHEN checks IS NOT NULL;
    END LOOP;
    IF checks IS NULL THEN
        -- Not carried: the statement's own write (the driver fenced it), or one made
        -- under an override; anything else reached this relation through a name the
        -- driver did not carry the epoch for.
        IF words && TG_ARGV[1:TG_NARGS - 1] OR sqlfence.active_override() IS NOT NULL THEN
            RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'SF001',
            MESSAGE = format('sqlfence guard: %s on %I.%I rejected: the statement carries its epoch, but not for %I.%I (a partition or child written through another name, or a trigger, rule, foreign key or function the driver did not see)',
                TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_TABLE_SCHEMA, TG_TABLE_NAME),
            HINT = 'Nothing was written. The driver reads the catalog again before its next statement: retry the statement; write partitions and children by the name the policy protects.';
    END IF;
    IF current_setting('sqlfence.fenced', true) IS DISTINCT FROM 'on' THEN
        RAISE EXCEPTION USING ERRCODE = 'SF001',
            MESSAGE = format('sqlfence guard: %s on %I.%I rejected: the session did not come through the sqlfence driver', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME);
    END IF;
    epoch := substr(words[1], 2)::bigint;
    IF TG_OP <> 'INSERT' THEN
        stored := (to_jsonb(OLD) ->> TG_ARGV[0])::bigint;
        IF stored > epoch OR stored = epoch AND strpos(checks, {{strict}}) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = CASE WHEN stored = epoch THEN 'SF110' ELSE 'SF101' END,
                SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME, COLUMN = TG_ARGV[0],
                MESSAGE = format('sqlfence guard: %s on %I.%I fenced: a row the server wrote for the statement (a trigger, rule, foreign-key action or function) holds epoch %s, %s the statement''s epoch %s',
                    TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, stored, CASE WHEN stored = epoch THEN 'equal to (strict mode)' ELSE 'above' END, epoch),
                DETAIL = format('stored epoch %s, statement epoch %s', stored, epoch),
                HINT = 'Nothing was written: the whole statement failed.';
        END IF;
    END IF;
    IF strpos(checks, {{claimcheck}}) > 0 THEN
        SELECT string_to_array(substr(w, 2), {{claimmark}}) INTO claim FROM unnest(words) w WHERE starts_with(w, {{claimmark}}) LIMIT 1;
        IF claim IS NOT NULL AND cardinality(claim) = 4 THEN
            claim_rel := to_regclass(convert_from(decode(claim[1], 'hex'), 'UTF8'));
            claim_key := convert_from(decode(claim[2], 'hex'), 'UTF8');
            claim_col := convert_from(decode(claim[3], 'hex'), 'UTF8');
            SELECT format_type(a.atttypid, a.atttypmod) INTO key_type FROM pg_attribute a
            WHERE a.attrelid = claim_rel AND a.attname = claim_key AND a.attnum > 0 AND NOT a.attisdropped;
        END IF;
        IF key_type IS NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'SF001',
                MESSAGE = format('sqlfence guard: %s on %I.%I rejected: the statement carries a claim check the guard cannot read', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME);
        END IF;
        EXECUTE format('SELECT %I FROM %s WHERE %I = CAST($1 AS %s) FOR KEY SHARE', claim_col, claim_rel, claim_key, key_type)
            INTO claim_epoch USING convert_from(decode(claim[4], 'hex'), 'UTF8');
        IF claim_epoch IS DISTINCT FROM epoch THEN
            RAISE EXCEPTION USING ERRCODE = 'SF102',
                SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME, COLUMN = TG_ARGV[0],
                MESSAGE = format('sqlfence guard: %s on %I.%I fenced: the claim the statement runs under was superseded (%s holds epoch %s for the job, the statement %s)',
                    TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, claim_rel, coalesce(claim_epoch::text, 'no row'), epoch),
                DETAIL = format('stored epoch %s, statement epoch %s', coalesce(claim_epoch::text, 'none'), epoch),
                HINT = 'Nothing was written: the whole statement failed.';
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN jsonb_populate_record(NEW, jsonb_build_object(TG_ARGV[0], epoch));
END
$fn$;

-- guard_rows puts (or puts again) the row trigger on one relation that holds rows:
-- marks are the names the driver's marker gives it or its parents.
CREATE OR REPLACE FUNCTION sqlfence.guard_rows(rel oid, epoch_column text, marks text[])
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = rel AND g.tgname = 'sqlfence_guard_row') THEN
        EXECUTE format('DROP TRIGGER sqlfence_guard_row ON %s', rel::regclass);
    END IF;
    EXECUTE format('CREATE TRIGGER sqlfence_guard_row BEFORE INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW '
        'WHEN (pg_catalog.starts_with(pg_catalog.current_query(), %L)) EXECUTE FUNCTION sqlfence.guard_row(%s)',
        rel::regclass, {{carryprefix}},
        array_to_string(ARRAY(SELECT quote_literal(m) FROM unnest(epoch_column || marks) m), ', '));
END
$fn$;

-- guard_statements puts (or puts again) the statement trigger on one relation: rel's
-- writes pass only as the driver's statements fenced for mark (its name in the
-- driver's marker); inserts too when guard_insert.
CREATE OR REPLACE FUNCTION sqlfence.guard_statements(rel oid, relkind text, mark text, guard_insert boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    events text := 'UPDATE OR DELETE';
BEGIN
    IF guard_insert THEN
        events := 'INSERT OR ' || events;
    END IF;
    IF relkind <> 'f' THEN
        events := events || ' OR TRUNCATE';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_trigger g WHERE g.tgrelid = rel AND g.tgname = 'sqlfence_guard') THEN
        EXECUTE format('DROP TRIGGER sqlfence_guard ON %s', rel::regclass);
    END IF;
    EXECUTE format('CREATE TRIGGER sqlfence_guard BEFORE %s ON %s FOR EACH STATEMENT EXECUTE FUNCTION sqlfence.guard(%L)',
        events, rel::regclass, mark);
    PERFORM sqlfence.guard_always(rel);
END
$fn$;
`
