UPDATE jobs SET lease_expires_at = now() WHERE id = $1
---- sent ----
PASS
