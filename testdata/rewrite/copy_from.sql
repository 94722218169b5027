COPY inventory (sku, quantity) FROM STDIN
---- sent ----
REFUSED: sqlfence: refused [SF302]: table inventory: COPY FROM cannot be fenced; insert the rows with INSERT … VALUES or INSERT … SELECT FROM unnest($1::…[]) under an epoch
