INSERT INTO reports (id, body) OVERRIDING USER VALUE SELECT 1, 'x'
---- sent ----
/*sqlfence fenced: reports*/ INSERT INTO reports (id, body, fence_epoch) OVERRIDING USER VALUE SELECT 1, 'x', $1::bigint
