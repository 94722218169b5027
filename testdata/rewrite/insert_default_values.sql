INSERT INTO reports DEFAULT VALUES RETURNING id
---- sent ----
/*sqlfence fenced: reports*/ INSERT INTO reports (fence_epoch) VALUES ($1::bigint) RETURNING id
