package claim

// NewJobsBeforeTimelines and NewLedgerBeforeTimelines draw epochs as the helpers did
// before epochs carried the arbiter's timeline: the failover tests run them to show
// what the format prevents (a promoted standby handing the same epochs out again).
func NewJobsBeforeTimelines(cfg JobsConfig) (*Jobs, error) { return newJobs(cfg, true) }

func NewLedgerBeforeTimelines(cfg LedgerConfig) (*Ledger, error) { return newLedger(cfg, true) }

// SetClaimTimeline makes l believe its claim was drawn on timeline tl, as if the
// arbiter had failed over since: the tests of the failover alarm on one server.
func SetClaimTimeline(l *Lease, tl int64) { l.timeline = tl }
