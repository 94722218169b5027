SELECT set_config('standard_conforming_strings', 'off', false)
---- sent ----
REFUSED: sqlfence: refused [SF405]: set_config of standard_conforming_strings is not run on a fenced connection: with it off the server reads a backslash inside '…' as an escape, and reads statements differently from sqlfence; leave it on (the default since PostgreSQL 9.1); write backslash escapes as E'…' strings
