-- What bun (github.com/uptrace/bun, pgdialect) sends: it quotes every identifier, aliases
-- tables, and inlines values instead of sending parameters.
-- Format: see the comment at the top of benign_test.go.

--! setup
CREATE TABLE users (id bigserial PRIMARY KEY, name text, email text UNIQUE, age int, deleted_at timestamptz);
CREATE TABLE posts (id bigserial PRIMARY KEY, user_id bigint, title text);
CREATE TABLE bun_migrations (id bigserial PRIMARY KEY, name varchar, group_id bigint, migrated_at timestamptz NOT NULL DEFAULT current_timestamp);
CREATE TABLE bun_migration_locks (id bigserial PRIMARY KEY, table_name varchar UNIQUE);
INSERT INTO users (name, email, age) VALUES ('ann', 'ann@example.com', 30), ('bob', 'bob@example.com', 40), ('cid', 'cid@example.com', 50);
INSERT INTO posts (user_id, title) VALUES (1, 'a'), (2, 'b');

--! name: bun-select-pk
--! source: bun NewSelect().Model(u).WherePK()
SELECT "u"."id", "u"."name", "u"."email", "u"."age", "u"."deleted_at" FROM "users" AS "u" WHERE "u"."deleted_at" IS NULL AND ("u"."id" = 1)

--! name: bun-select-where
--! source: bun NewSelect().Where("name = ?", x)
SELECT "u"."id", "u"."name" FROM "users" AS "u" WHERE (name = 'ann') AND "u"."deleted_at" IS NULL ORDER BY "u"."id" ASC LIMIT 10

--! name: bun-count
--! source: bun Count
SELECT count(*) FROM "users" AS "u" WHERE "u"."deleted_at" IS NULL

--! name: bun-exists
--! source: bun Exists
SELECT EXISTS (SELECT "u"."id" FROM "users" AS "u" WHERE (email = 'ann@example.com') AND "u"."deleted_at" IS NULL)

--! name: bun-insert
--! source: bun NewInsert
INSERT INTO "users" AS "u" ("id", "name", "email", "age", "deleted_at") VALUES (DEFAULT, 'dan', 'dan@example.com', 28, DEFAULT) RETURNING "id"

--! name: bun-insert-bulk
--! source: bun NewInsert of a slice
INSERT INTO "posts" AS "p" ("id", "user_id", "title") VALUES (DEFAULT, 1, 'x'), (DEFAULT, 2, 'y') RETURNING "id"

--! name: bun-upsert
--! source: bun On("CONFLICT (email) DO UPDATE")
INSERT INTO "users" AS "u" ("id", "name", "email", "age", "deleted_at") VALUES (DEFAULT, 'bob', 'bob@example.com', 41, DEFAULT) ON CONFLICT (email) DO UPDATE SET age = EXCLUDED.age RETURNING "id"

--! name: bun-update-pk
--! source: bun NewUpdate().WherePK()
UPDATE "users" AS "u" SET "name" = 'annie', "email" = 'ann@example.com', "age" = 31, "deleted_at" = NULL WHERE "u"."deleted_at" IS NULL AND ("u"."id" = 1)

--! name: bun-update-bulk
--! source: bun NewUpdate().With("_data", NewValues(&users)).Bulk()
WITH "_data" ("id", "name") AS (VALUES (1::BIGINT, 'ann'::VARCHAR), (2::BIGINT, 'bobby'::VARCHAR)) UPDATE "users" AS "u" SET "name" = _data."name" FROM _data WHERE ("u"."id" = _data."id")

--! name: bun-soft-delete
--! source: bun NewDelete on a model with soft delete
UPDATE "users" AS "u" SET "deleted_at" = '2024-05-03 10:00:00+00:00' WHERE "u"."deleted_at" IS NULL AND ("u"."id" = 3)

--! name: bun-force-delete
--! source: bun NewDelete().ForceDelete()
DELETE FROM "posts" AS "p" WHERE ("p"."id" = 2)

--! name: bun-relation
--! source: bun Relation("Posts")
SELECT "p"."id", "p"."user_id", "p"."title" FROM "posts" AS "p" WHERE ("p"."user_id" IN (1, 2))

--! name: bun-migrations-select
--! source: bun migrate
SELECT "m"."id", "m"."name", "m"."group_id", "m"."migrated_at" FROM "bun_migrations" AS "m" ORDER BY "id" DESC

--! name: bun-migration-lock
--! source: bun migrate Lock
INSERT INTO "bun_migration_locks" AS "l" ("id", "table_name") VALUES (DEFAULT, 'bun_migrations') RETURNING "id"

--! name: bun-migration-unlock
--! source: bun migrate Unlock
DELETE FROM "bun_migration_locks" AS "l" WHERE ("table_name" = 'bun_migrations')
