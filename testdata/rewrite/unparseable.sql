UPDATE inventory SET
---- sent ----
REFUSED: sqlfence: refused [SF320]: cannot parse the statement: syntax error at end of input; fix the SQL syntax; sqlfence never sends a statement it cannot read
