package sqlfence

// RefreshCounters reports a connector's fingerprint checks, full catalog reads and
// reads that kept the enforcer (tests and benchmarks).
func RefreshCounters(c any) (checks, reads, kept int64) {
	f := c.(*connector).fence
	return f.checks.Load(), f.reads.Load(), f.kept.Load()
}
