-- Extension functions in everyday use and materialized views, under resolve: catalog:
-- a call passes when every function of its name is a reviewed extension's own C
-- function (pgcrypto, pg_trgm, uuid-ossp); a REFRESH when the view's query and its
-- indexes pass as a read. Format: see the comment at the top of benign_test.go.

--! policy: catalog
--! setup
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS "uuid-ossp";
CREATE TABLE IF NOT EXISTS accounts (id bigserial PRIMARY KEY, email text NOT NULL, pw text NOT NULL DEFAULT '');
INSERT INTO accounts (email, pw) VALUES ('ann@example.com', crypt('hunter2', gen_salt('bf', 4))), ('bob@example.com', '');
CREATE MATERIALIZED VIEW IF NOT EXISTS account_domains AS
    SELECT split_part(email, '@', 2) AS domain, count(*) AS n FROM accounts GROUP BY 1;
CREATE UNIQUE INDEX IF NOT EXISTS account_domains_domain ON account_domains (domain);

--! name: ext-pgcrypto-crypt-gen-salt
--! source: password hashing in SQL
--! args: ["hunter2"]
SELECT crypt($1, gen_salt('bf', 4))

--! name: ext-pgcrypto-crypt-check
--! args: ["ann@example.com", "hunter2"]
SELECT id FROM accounts WHERE email = $1 AND pw = crypt($2, pw)

--! name: ext-pgcrypto-update-unprotected
--! args: ["hunter2", "bob@example.com"]
UPDATE accounts SET pw = crypt($1, gen_salt('md5')) WHERE email = $2

--! name: ext-pgcrypto-digest
SELECT encode(digest('payload', 'sha256'), 'hex')

--! name: ext-pgcrypto-hmac
--! args: ["body", "secret"]
SELECT encode(hmac($1, $2, 'sha256'), 'hex')

--! name: ext-pgcrypto-gen-random-bytes
SELECT encode(gen_random_bytes(16), 'hex')

--! name: ext-pgcrypto-pgp-sym
--! args: ["secret text", "key"]
SELECT pgp_sym_decrypt(pgp_sym_encrypt($1, $2), $2)

--! name: ext-pg-trgm-similarity
--! source: fuzzy search
--! args: ["ann"]
SELECT email, similarity(email, $1) AS score FROM accounts ORDER BY score DESC LIMIT 5

--! name: ext-pg-trgm-word-similarity
SELECT word_similarity('word', 'two words')

--! name: ext-pg-trgm-show-trgm
SELECT show_trgm('cat')

--! name: ext-pg-trgm-operator
--! args: ["ann@example.con"]
SELECT email FROM accounts WHERE email % $1

--! name: ext-uuid-v4
SELECT uuid_generate_v4()

--! name: ext-uuid-v1
SELECT uuid_generate_v1()

--! name: ext-uuid-v5
SELECT uuid_generate_v5(uuid_ns_url(), 'https://example.com')

--! name: ext-qualified
SELECT public.uuid_generate_v4(), public.digest('x', 'md5')

--! name: matview-refresh
--! source: reporting jobs
REFRESH MATERIALIZED VIEW account_domains

--! name: matview-refresh-concurrently
REFRESH MATERIALIZED VIEW CONCURRENTLY account_domains

--! name: named-arg-colon-equals-catalog
SELECT make_interval(days := 1), uuid_generate_v5(namespace := uuid_ns_url(), name := 'https://example.com')
