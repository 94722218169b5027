-- Routines the server runs for a statement without its text naming them — column
-- defaults, generated columns, CHECK constraints, index expressions, trigger
-- conditions, views' queries, domains' checks, casts — that write no table: judged
-- like the calls they are (catalog_bound.go), they pass. Format: see the comment at
-- the top of benign_test.go.

--! policy: catalog
--! setup
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE OR REPLACE FUNCTION public.slugify(text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT lower(regexp_replace($1, '[^a-zA-Z0-9]+', '-', 'g')) $$;
CREATE OR REPLACE FUNCTION public.valid_email(text) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN $1 LIKE '%@%'; END $$;
CREATE OR REPLACE FUNCTION public.next_code() RETURNS text LANGUAGE sql VOLATILE AS $$ SELECT 'C-' || floor(random() * 1000)::int $$;
CREATE OR REPLACE FUNCTION public.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated_at := now(); RETURN NEW; END $$;
DO $$ BEGIN CREATE DOMAIN email AS text CHECK (public.valid_email(VALUE)); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE DOMAIN positive AS int CHECK (VALUE > 0); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE TABLE IF NOT EXISTS articles (
    id uuid PRIMARY KEY DEFAULT uuid_generate_v4(),
    ref uuid NOT NULL DEFAULT gen_random_uuid(),
    title text NOT NULL,
    slug text GENERATED ALWAYS AS (public.slugify(title)) STORED,
    code text NOT NULL DEFAULT public.next_code(),
    author email,
    pages positive DEFAULT 1,
    updated_at timestamptz,
    CONSTRAINT articles_title CHECK (public.slugify(title) <> '')
);
CREATE INDEX IF NOT EXISTS articles_lower_title ON articles (lower(title));
CREATE INDEX IF NOT EXISTS articles_slug_fn ON articles ((public.slugify(title)));
DROP TRIGGER IF EXISTS articles_touch ON articles;
CREATE TRIGGER articles_touch BEFORE UPDATE ON articles FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title) EXECUTE FUNCTION public.touch();
CREATE OR REPLACE VIEW article_slugs AS SELECT id, public.slugify(title) AS s FROM articles;
CREATE EXTENSION IF NOT EXISTS citext;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DO $$ BEGIN CREATE TYPE member_role AS ENUM ('owner', 'member'); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE DOMAIN work_email AS email CHECK (VALUE NOT LIKE '%@example.org'); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE TYPE contact AS (mail email, name text); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE OR REPLACE FUNCTION public.hours_diff(timestamptz, timestamptz) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN extract(epoch FROM $1 - $2) / 3600; END $$;
DO $$ BEGIN CREATE TYPE shift AS RANGE (subtype = timestamptz, subtype_diff = public.hours_diff); EXCEPTION WHEN duplicate_object THEN NULL; END $$;
CREATE TABLE IF NOT EXISTS members (
    id bigserial PRIMARY KEY,
    login citext NOT NULL UNIQUE,
    role member_role NOT NULL DEFAULT 'member',
    mail work_email,
    created_at timestamptz NOT NULL DEFAULT now(),
    on_duty shift
);
CREATE INDEX IF NOT EXISTS members_login_trgm ON members USING gin ((login::text) gin_trgm_ops);
CREATE OR REPLACE VIEW member_articles AS
    SELECT m.login, coalesce(a.title, '') AS title, public.slugify(coalesce(a.title, m.login::text)) AS s
    FROM members m LEFT JOIN articles a ON a.author = m.mail::text;

--! name: bound-insert-defaults
--! source: an ORM's INSERT leaving id, slug and code to the table
--! args: ["Hello, World", "ann@example.com"]
INSERT INTO articles (title, author) VALUES ($1, $2) RETURNING id, slug, code

--! name: bound-update-trigger-condition
--! args: ["Hello again"]
UPDATE articles SET title = $1 WHERE author = 'ann@example.com'

--! name: bound-read-view
SELECT s FROM article_slugs ORDER BY s

--! name: bound-domain-cast
SELECT 'bob@example.com'::email, 3::positive

--! name: bound-insert-domain-default
INSERT INTO articles (title) VALUES ('Defaults only')

--! name: bound-citext-enum-insert
--! source: a Rails-style schema: a citext login, an enum role, DEFAULT now(), a domain over a domain
--! args: ["Ann", "ann@example.com"]
INSERT INTO members (login, mail, on_duty) VALUES ($1, $2, tstzrange(now(), now() + interval '8 hours')::text::shift) RETURNING id, role, created_at

--! name: bound-citext-order
SELECT login, role FROM members WHERE login = 'ANN' ORDER BY login, role

--! name: bound-trgm-search
--! args: ["%an%"]
SELECT login FROM members WHERE login::text ILIKE $1

--! name: bound-range-estimate
SELECT count(*) FROM members WHERE on_duty && '[2026-01-01, 2026-01-02)'

--! name: bound-domain-within
SELECT 'bob@example.com'::work_email, ROW('bob@example.com', 'Bob')::contact

--! name: bound-view-join-coalesce
SELECT login, title, s FROM member_articles ORDER BY login
