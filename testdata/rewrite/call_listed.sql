CALL billing.recalc($1)
---- sent ----
REFUSED: sqlfence: refused [SF410]: CALL of billing.recalc, which the policy lists as writing protected tables; write the tables with plain statements under an epoch, or call it through sqlfence.Unfenced
