UPDATE other.invoices SET total = 1
---- sent ----
PASS
