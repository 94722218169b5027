MERGE INTO reports r USING (VALUES (1), (77)) v(id) ON r.id = v.id WHEN MATCHED THEN UPDATE SET body = 'merged' WHEN NOT MATCHED THEN INSERT DEFAULT VALUES
---- sent ----
/*sqlfence fenced: reports*/ MERGE INTO reports r USING (VALUES (1), (77)) v(id) ON r.id = v.id WHEN MATCHED AND r.fence_epoch OPERATOR(pg_catalog.<) $1::bigint THEN UPDATE SET body = 'merged', fence_epoch = $1::bigint WHEN NOT MATCHED THEN INSERT (fence_epoch) VALUES ($1::bigint)
