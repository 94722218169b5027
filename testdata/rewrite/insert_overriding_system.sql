INSERT INTO reports (id, body) OVERRIDING SYSTEM VALUE VALUES (50, $1)
---- sent ----
/*sqlfence fenced: reports*/ INSERT INTO reports (id, body, fence_epoch) OVERRIDING SYSTEM VALUE VALUES (50, $1, $2::bigint)
