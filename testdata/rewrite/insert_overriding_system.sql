INSERT INTO reports (id, body) OVERRIDING SYSTEM VALUE VALUES (50, $1)
---- sent ----
INSERT INTO reports (id, body, fence_epoch) OVERRIDING SYSTEM VALUE VALUES (50, $1, $2::bigint)
