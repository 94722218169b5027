-- Hand-written SQL as sqlx applications send it (Get, Select, NamedExec after Rebind,
-- In). Format: see the comment at the top of benign_test.go.

--! setup
CREATE TABLE users (id bigserial PRIMARY KEY, name text NOT NULL, email text UNIQUE, age int, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE posts (id bigserial PRIMARY KEY, user_id bigint NOT NULL REFERENCES users, title text, body text);
INSERT INTO users (name, email, age) VALUES ('ann', 'ann@example.com', 30), ('bob', 'bob@example.com', 40), ('cid', 'cid@example.com', 50);

--! name: sqlx-get
--! source: sqlx Get
--! args: [1]
SELECT * FROM users WHERE id = $1

--! name: sqlx-select
--! source: sqlx Select
SELECT id, name, email FROM users ORDER BY id

--! name: sqlx-in-rebound
--! source: sqlx.In then Rebind
--! args: [1, 2, 3]
SELECT * FROM users WHERE id IN ($1, $2, $3)

--! name: sqlx-any-array
--! source: pq.Array / pgx array argument
--! args: ["{1,2}"]
SELECT id, name FROM users WHERE id = ANY($1::bigint[])

--! name: sqlx-named-insert
--! source: sqlx NamedExec after binding
--! args: ["dan", "dan@example.com", 22]
INSERT INTO users (name, email, age) VALUES ($1, $2, $3) RETURNING id

--! name: sqlx-insert-post
--! source: sqlx MustExec
--! args: [1, "title", "body"]
INSERT INTO posts (user_id, title, body) VALUES ($1, $2, $3)

--! name: sqlx-update
--! source: sqlx Exec
--! args: [2]
UPDATE users SET age = age + 1 WHERE id = $1

--! name: sqlx-delete
--! source: sqlx Exec
--! args: [1, 999]
DELETE FROM posts WHERE user_id = $1 AND id = $2

--! name: sqlx-exists
--! source: sqlx Get into a bool
--! args: ["ann@example.com"]
SELECT EXISTS(SELECT 1 FROM users WHERE email = $1)

--! name: sqlx-page
--! source: sqlx Select with limit and offset
--! args: [10, 0]
SELECT id, name FROM users ORDER BY created_at DESC LIMIT $1 OFFSET $2

--! name: sqlx-join-aggregate
--! source: sqlx Select
SELECT u.id, u.name, count(p.id) AS posts FROM users u LEFT JOIN posts p ON p.user_id = u.id GROUP BY u.id, u.name HAVING count(p.id) >= 0 ORDER BY u.id

--! name: sqlx-upsert-nothing
--! source: sqlx Exec
--! args: ["ann", "ann@example.com"]
INSERT INTO users (name, email) VALUES ($1, $2) ON CONFLICT (email) DO NOTHING

--! name: sqlx-multiline
--! source: hand-written, formatted over several lines
--! args: [25]
SELECT
    u.id,
    u.name
FROM users AS u
WHERE u.age > $1 -- adults only
ORDER BY u.id
