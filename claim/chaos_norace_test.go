//go:build unix && !race

package claim_test

// The default run: about 15 s a mode on 2 CPUs.
const (
	chaosJobs    = 600
	chaosEvents  = 8
	chaosWorkers = 4
)
