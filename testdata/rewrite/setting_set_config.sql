SELECT set_config('standard_conforming_strings', 'off', false)
---- sent ----
REFUSED: sqlfence: refused: changing standard_conforming_strings would let the server read statements differently from sqlfence; leave it on (the default since PostgreSQL 9.1); write backslash escapes as E'…' strings
