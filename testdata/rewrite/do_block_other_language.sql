DO LANGUAGE plpython3u $$ plpy.execute("UPDATE inventory SET quantity = 0") $$
---- sent ----
REFUSED: sqlfence: refused: table inventory: a DO block that sqlfence cannot read mentions a protected table; run the writes as plain statements under sqlfence.WithEpoch
