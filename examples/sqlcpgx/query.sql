-- name: ShipItem :execrows
UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1;

-- name: UpsertItem :one
INSERT INTO inventory (sku, quantity) VALUES ($1, $2)
ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity
RETURNING sku, quantity, writer_epoch;

-- name: CopyItems :copyfrom
INSERT INTO inventory (sku, quantity) VALUES ($1, $2);

-- name: ShipItems :batchexec
UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1;
