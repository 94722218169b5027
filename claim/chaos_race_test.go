//go:build unix && race

package claim_test

// Under the race detector everything runs several times slower: fewer events,
// workers and jobs.
const (
	chaosEvents  = 6
	chaosWorkers = 3
	chaosBatch   = 60 // jobs enqueued at a time, whenever fewer than half a batch remain
)

// patroniStrict: under the race detector TestPatroniChaos runs the asynchronous
// cluster only (the strict one adds minutes and no other code path).
const patroniStrict = false
