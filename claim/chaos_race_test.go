//go:build unix && race

package claim_test

// Under the race detector everything runs several times slower: a shorter run.
const (
	chaosJobs    = 100
	chaosEvents  = 6
	chaosWorkers = 3
)
