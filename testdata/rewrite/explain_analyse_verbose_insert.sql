EXPLAIN ANALYSE VERBOSE INSERT INTO reports (body) VALUES ($1)
---- sent ----
/*sqlfence fenced: reports*/ EXPLAIN ANALYSE VERBOSE INSERT INTO reports (body, fence_epoch) VALUES ($1, $2::bigint)
