-- DDL under resolve: catalog and ddl: allow when the catalog holds an event trigger
-- and stored expressions that write no protected table: the event trigger any DDL
-- fires, and the index expressions and constraints a rebuild or a validation re-runs,
-- are judged as the calls they are (catalog_bound.go), and pass. Format: see the
-- comment at the top of benign_test.go.

--! policy: catalog ddl
--! setup
CREATE TABLE IF NOT EXISTS ddl_log (tag text, at timestamptz DEFAULT now());
CREATE OR REPLACE FUNCTION public.log_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO ddl_log (tag) VALUES (tg_tag); END $$;
DO $$ BEGIN CREATE EVENT TRIGGER log_ddl ON ddl_command_end EXECUTE FUNCTION public.log_ddl(); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE OR REPLACE FUNCTION public.norm(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT lower(trim($1)) $$;
CREATE TABLE IF NOT EXISTS tags (id bigserial PRIMARY KEY, name text NOT NULL CHECK (public.norm(name) <> ''));
CREATE INDEX IF NOT EXISTS tags_norm ON tags ((public.norm(name)));

--! name: bound-ddl-add-column
--! source: a migration adding a column
ALTER TABLE tags ADD COLUMN IF NOT EXISTS color text

--! name: bound-ddl-create-index
CREATE INDEX IF NOT EXISTS tags_color ON tags (color)

--! name: bound-ddl-analyze
ANALYZE tags

--! name: bound-ddl-reindex
REINDEX TABLE tags
