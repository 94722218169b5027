INSERT INTO inventory VALUES ($1, $2)
---- sent ----
REFUSED: sqlfence: refused [SF304]: table inventory: INSERT into a protected table without a column list; name the columns: INSERT INTO t (a, b) VALUES (…); sqlfence adds writer_epoch to the list
