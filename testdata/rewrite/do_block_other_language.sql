DO LANGUAGE plpython3u $$ plpy.execute("UPDATE inventory SET quantity = 0") $$
---- sent ----
REFUSED: sqlfence: refused [SF414]: a DO block in language plpython3u, which sqlfence cannot read; run the statements as plain statements through the driver
