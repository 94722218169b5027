package claim

// NewJobsBeforeTimelines and NewLedgerBeforeTimelines draw epochs as the helpers did
// before epochs carried the arbiter's timeline: the failover tests run them to show
// what the format prevents (a promoted standby handing the same epochs out again).
func NewJobsBeforeTimelines(cfg JobsConfig) (*Jobs, error) { return newJobs(cfg, true) }

func NewLedgerBeforeTimelines(cfg LedgerConfig) (*Ledger, error) { return newLedger(cfg, true) }
