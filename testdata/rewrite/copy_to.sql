COPY inventory TO STDOUT
---- sent ----
PASS
