UPDATE reports SET body = $1 WHERE id = $2
---- sent ----
/*sqlfence fenced: reports*/ UPDATE reports SET body = $1, fence_epoch = $3::bigint WHERE (id = $2) AND reports.fence_epoch OPERATOR(pg_catalog.<) $3::bigint
