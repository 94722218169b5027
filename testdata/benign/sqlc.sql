-- What sqlc generates: its queries keep the "-- name: … :kind" comment in the text it
-- sends. The reads of the protected inventory table are plain reads (fenced writes are
-- covered by the differential corpus). Format: see the comment at the top of
-- benign_test.go.

--! setup
CREATE TABLE authors (id bigserial PRIMARY KEY, name text NOT NULL, bio text);
CREATE TABLE books (id bigserial PRIMARY KEY, author_id bigint NOT NULL REFERENCES authors ON DELETE CASCADE, title text NOT NULL, tags text[] NOT NULL DEFAULT '{}');
INSERT INTO authors (name, bio) VALUES ('ann', 'x'), ('bob', NULL);
INSERT INTO books (author_id, title) VALUES (1, 'one'), (2, 'two');

--! name: sqlc-get-author
--! source: sqlc :one
--! args: [1]
-- name: GetAuthor :one
SELECT id, name, bio FROM authors
WHERE id = $1 LIMIT 1

--! name: sqlc-list-authors
--! source: sqlc :many
-- name: ListAuthors :many
SELECT id, name, bio FROM authors
ORDER BY name

--! name: sqlc-create-author
--! source: sqlc :one with RETURNING *
--! args: ["cid", "bio"]
-- name: CreateAuthor :one
INSERT INTO authors (
  name, bio
) VALUES (
  $1, $2
)
RETURNING id, name, bio

--! name: sqlc-update-author
--! source: sqlc :exec
--! args: [1, "ann", "new bio"]
-- name: UpdateAuthor :exec
UPDATE authors
  set name = $2,
  bio = $3
WHERE id = $1

--! name: sqlc-update-author-rows
--! source: sqlc :execrows
--! args: [2, null]
-- name: UpdateAuthorBio :execrows
UPDATE authors SET bio = $2 WHERE id = $1

--! name: sqlc-delete-book
--! source: sqlc :exec
--! args: [999]
-- name: DeleteBook :exec
DELETE FROM books
WHERE id = $1

--! name: sqlc-count-books
--! source: sqlc :one
-- name: CountBooks :one
SELECT count(*) FROM books

--! name: sqlc-books-by-tags
--! source: sqlc :many with an array parameter
--! args: ["{a,b}"]
-- name: BooksByTags :many
SELECT id, author_id, title, tags FROM books
WHERE tags && $1::text[]

--! name: sqlc-books-by-ids
--! source: sqlc sqlc.slice / ANY
--! args: ["{1,2}"]
-- name: BooksByIDs :many
SELECT id, title FROM books WHERE id = ANY($1::bigint[])

--! name: sqlc-upsert-author
--! source: sqlc :one
--! args: [1, "ann", "upserted"]
-- name: UpsertAuthor :one
INSERT INTO authors (id, name, bio) VALUES ($1, $2, $3)
ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, bio = EXCLUDED.bio
RETURNING id

--! name: sqlc-get-inventory
--! source: sqlc :one on a protected table (a read)
--! args: ["a"]
-- name: GetInventory :one
SELECT sku, quantity, note, writer_epoch FROM inventory
WHERE sku = $1

--! name: sqlc-list-inventory-for-update
--! source: sqlc :many, a locking read of a protected table
--! args: ["{a,b}"]
-- name: LockInventory :many
SELECT sku, quantity FROM inventory
WHERE sku = ANY($1::text[])
FOR UPDATE

--! name: sqlc-inventory-join
--! source: sqlc :many joining a protected table
-- name: InventoryWithStaging :many
SELECT i.sku, i.quantity, s.q
FROM inventory i
JOIN staging s ON s.sku = i.sku
ORDER BY i.sku

--! name: sqlc-invoice-total
--! source: sqlc :one on a qualified protected table
--! args: [1]
-- name: InvoiceTotal :one
SELECT total FROM billing.invoices WHERE id = $1
