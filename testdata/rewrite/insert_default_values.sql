INSERT INTO reports DEFAULT VALUES RETURNING id
---- sent ----
INSERT INTO reports (fence_epoch) VALUES ($1::bigint) RETURNING id
