//go:build unix && !race

package claim_test

// The default run: about 10 s a mode on 2 CPUs.
const (
	chaosEvents  = 8
	chaosWorkers = 4
	chaosBatch   = 120 // jobs enqueued at a time, whenever fewer than half a batch remain
)

// patroniStrict: TestPatroniChaos also runs under synchronous_mode_strict (about
// 100 s more).
const patroniStrict = true
