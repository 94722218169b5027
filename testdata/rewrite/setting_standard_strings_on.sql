SET standard_conforming_strings TO on
---- sent ----
PASS
