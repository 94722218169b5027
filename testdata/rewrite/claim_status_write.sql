UPDATE jobs SET status = 'claimed' WHERE id = $1
---- sent ----
CLAIM HELPERS ONLY: jobs
