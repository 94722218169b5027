-- What GORM v2 (gorm.io/driver/postgres) sends: its migrator's catalog queries and the
-- CRUD of a model with soft delete. Format: see the comment at the top of benign_test.go.

--! setup
CREATE TABLE users (id bigserial PRIMARY KEY, created_at timestamptz, updated_at timestamptz, deleted_at timestamptz, name text, email text UNIQUE, age int);
CREATE INDEX idx_users_deleted_at ON users (deleted_at);
CREATE TABLE posts (id bigserial PRIMARY KEY, user_id bigint REFERENCES users, title text, body text);
INSERT INTO users (name, email, age) VALUES ('ann', 'ann@example.com', 30), ('bob', 'bob@example.com', 40);
INSERT INTO posts (user_id, title) VALUES (1, 'hello'), (2, 'world');

--! name: gorm-current-database
--! source: gorm migrator
SELECT CURRENT_DATABASE()

--! name: gorm-has-table
--! source: gorm migrator HasTable
--! args: ["users", "BASE TABLE"]
SELECT count(*) FROM information_schema.tables WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1 AND table_type = $2

--! name: gorm-has-table-with-schema
--! source: gorm migrator HasTable, schema-qualified model
--! args: ["public", "users", "BASE TABLE"]
SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2 AND table_type = $3

--! name: gorm-has-column
--! source: gorm migrator HasColumn
--! args: ["users", "email"]
SELECT count(*) FROM INFORMATION_SCHEMA.columns WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1 AND column_name = $2

--! name: gorm-has-index
--! source: gorm migrator HasIndex
--! args: ["users", "idx_users_deleted_at"]
SELECT count(*) FROM pg_indexes WHERE tablename = $1 AND indexname = $2 AND schemaname = CURRENT_SCHEMA()

--! name: gorm-has-constraint
--! source: gorm migrator HasConstraint
--! args: ["posts", "posts_user_id_fkey"]
SELECT count(*) FROM INFORMATION_SCHEMA.table_constraints WHERE table_schema = CURRENT_SCHEMA() AND table_name = $1 AND constraint_name = $2

--! name: gorm-column-types-probe
--! source: gorm migrator ColumnTypes
SELECT * FROM "users" LIMIT 1

--! name: gorm-column-types
--! source: gorm migrator ColumnTypes
--! args: ["postgres", "public", "users"]
SELECT c.column_name, c.is_nullable = 'YES', c.udt_name, c.character_maximum_length, c.numeric_precision, c.numeric_precision_radix, c.numeric_scale, c.datetime_precision, 8 * typlen, c.column_default, pd.description, c.identity_increment FROM information_schema.columns AS c JOIN pg_type AS pgt ON c.udt_name = pgt.typname LEFT JOIN pg_catalog.pg_description as pd ON pd.objsubid = c.ordinal_position AND pd.objoid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = c.table_name AND relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = c.table_schema)) where table_catalog = $1 AND table_schema = $2 AND table_name = $3

--! name: gorm-unique-constraints
--! source: gorm migrator ColumnTypes
--! args: ["public", "users", "UNIQUE"]
SELECT constraint_name FROM information_schema.table_constraints tc JOIN information_schema.constraint_column_usage AS ccu USING (constraint_schema, constraint_catalog, table_name, constraint_name) JOIN information_schema.columns AS c ON c.table_schema = tc.constraint_schema AND tc.table_name = c.table_name AND ccu.column_name = c.column_name WHERE c.table_schema = $1 AND c.table_name = $2 AND constraint_type = $3

--! name: gorm-get-indexes
--! source: gorm migrator GetIndexes
--! args: ["public", "users"]
SELECT ct.relname AS table_name, ci.relname AS index_name, i.indisunique AS non_unique, i.indisprimary AS primary, a.attname AS column_name FROM pg_index i LEFT JOIN pg_class ct ON ct.oid = i.indrelid LEFT JOIN pg_class ci ON ci.oid = i.indexrelid LEFT JOIN pg_attribute a ON a.attrelid = ct.oid LEFT JOIN pg_constraint con ON con.conindid = i.indexrelid WHERE a.attnum = ANY(i.indkey) AND con.oid IS NULL AND ct.relkind = 'r' AND ct.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = $1) AND ct.relname = $2

--! name: gorm-create-returning
--! source: gorm Create
--! args: ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", null, "cid", "cid@example.com", 25]
INSERT INTO "users" ("created_at","updated_at","deleted_at","name","email","age") VALUES ($1,$2,$3,$4,$5,$6) RETURNING "id"

--! name: gorm-create-batch
--! source: gorm CreateInBatches
--! args: ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", null, "dan", "dan@example.com", 31, "2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", null, "eve", "eve@example.com", 32]
INSERT INTO "users" ("created_at","updated_at","deleted_at","name","email","age") VALUES ($1,$2,$3,$4,$5,$6),($7,$8,$9,$10,$11,$12) RETURNING "id"

--! name: gorm-first
--! source: gorm First
--! args: [1, 1]
SELECT * FROM "users" WHERE "users"."id" = $1 AND "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT $2

--! name: gorm-first-inline-limit
--! source: gorm First (older versions inline the limit)
--! args: [1]
SELECT * FROM "users" WHERE "users"."id" = $1 AND "users"."deleted_at" IS NULL ORDER BY "users"."id" LIMIT 1

--! name: gorm-find-where
--! source: gorm Where(...).Find
--! args: ["%a%", 18]
SELECT * FROM "users" WHERE (name LIKE $1 AND age > $2) AND "users"."deleted_at" IS NULL

--! name: gorm-count
--! source: gorm Count
SELECT count(*) FROM "users" WHERE "users"."deleted_at" IS NULL

--! name: gorm-paginate
--! source: gorm Offset/Limit
SELECT * FROM "users" WHERE "users"."deleted_at" IS NULL ORDER BY created_at desc LIMIT 10 OFFSET 20

--! name: gorm-preload
--! source: gorm Preload
--! args: [1, 2]
SELECT * FROM "posts" WHERE "posts"."user_id" IN ($1,$2)

--! name: gorm-joins
--! source: gorm Joins
--! args: ["hello"]
SELECT "users"."id","users"."name","Post"."id" AS "Post__id","Post"."title" AS "Post__title" FROM "users" LEFT JOIN "posts" "Post" ON "users"."id" = "Post"."user_id" WHERE "Post"."title" = $1 AND "users"."deleted_at" IS NULL

--! name: gorm-save
--! source: gorm Save
--! args: ["2024-05-01T10:00:00Z", "2024-05-02T10:00:00Z", null, "ann", "ann@example.com", 31, 1]
UPDATE "users" SET "created_at"=$1,"updated_at"=$2,"deleted_at"=$3,"name"=$4,"email"=$5,"age"=$6 WHERE "users"."deleted_at" IS NULL AND "id" = $7

--! name: gorm-updates
--! source: gorm Model(&u).Updates(map)
--! args: ["annie", "2024-05-02T10:00:00Z", 1]
UPDATE "users" SET "name"=$1,"updated_at"=$2 WHERE "users"."deleted_at" IS NULL AND "id" = $3

--! name: gorm-update-expr
--! source: gorm UpdateColumn with gorm.Expr
--! args: [1, 2]
UPDATE "users" SET "age"=age + $1 WHERE "id" = $2 AND "users"."deleted_at" IS NULL

--! name: gorm-upsert
--! source: gorm clause.OnConflict
--! args: ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00Z", null, "bob", "bob@example.com", 41]
INSERT INTO "users" ("created_at","updated_at","deleted_at","name","email","age") VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT ("email") DO UPDATE SET "age"="excluded"."age" RETURNING "id"

--! name: gorm-soft-delete
--! source: gorm Delete (soft)
--! args: ["2024-05-03T10:00:00Z", 2]
UPDATE "users" SET "deleted_at"=$1 WHERE "users"."id" = $2 AND "users"."deleted_at" IS NULL

--! name: gorm-unscoped-delete
--! source: gorm Unscoped().Delete
--! args: [2]
DELETE FROM "posts" WHERE "posts"."id" = $1

--! name: gorm-savepoint
--! source: gorm nested transaction
--! db: skip needs an open transaction (txn.sql runs the sequence)
SAVEPOINT sp0x140001a2b30

--! name: gorm-rollback-to-savepoint
--! source: gorm nested transaction
--! db: skip needs an open transaction (txn.sql runs the sequence)
ROLLBACK TO SAVEPOINT sp0x140001a2b30
