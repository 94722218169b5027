package audit

// The counter kinds, as the JSON report names them.
const (
	kindSequence = "sequence"      // GlobalEpoch: a sequence
	kindCounter  = "counter_table" // CounterEpoch: a counter row
	kindJobs     = "jobs_table"    // PerJobEpoch: each job's own lease_epoch
)

type auditCounter struct {
	Kind   string `json:"kind"` // sequence, counter_table or jobs_table
	Name   string `json:"name"`
	Column string `json:"column,omitempty"`
	// Timeline is the server's write timeline: epochs drawn now are
	// Timeline<<32 plus the counter's own value.
	Timeline int64 `json:"timeline"`
	// Raw is the counter's own value: the sequence's last value, the counter row's
	// value, or the highest epoch of any job.
	Raw int64 `json:"raw_value"`
	// Value is the epoch rows are compared with: the highest epoch the counter can
	// have handed out, Timeline<<32 + Raw for a sequence or a counter table; for
	// per-job epochs the highest epoch of any job, or Timeline<<32 when higher
	// (every job's next claim is above it).
	Value int64 `json:"value"`
	// JobsLaterTimeline counts the jobs (per-job epochs) whose epoch belongs to a
	// later timeline than the server's; LaterJobs names some of them.
	JobsLaterTimeline int64          `json:"jobs_later_timeline,omitempty"`
	LaterJobs         []auditExample `json:"later_timeline_jobs,omitempty"`

	oid       uint32
	increment int64
	max       int64
}

type auditExample struct {
	Key   string `json:"key"`
	Epoch int64  `json:"epoch"`
}

type auditTable struct {
	Table       string `json:"table"`
	PolicyName  string `json:"policy_name"`
	EpochColumn string `json:"epoch_column"`
	Scanned     int64  `json:"rows_scanned"`
	Above       int64  `json:"rows_above"`
	// Highest is the highest epoch of any row, nil when no row has one.
	Highest    *int64 `json:"highest_epoch"`
	NullEpochs int64  `json:"null_epochs"`
	// OldFormat counts the rows whose epoch is of the format before timelines
	// (below 2^32); LaterTimeline those whose epoch belongs to a later timeline
	// than the server's.
	OldFormat     int64          `json:"rows_old_format"`
	LaterTimeline int64          `json:"rows_later_timeline"`
	Examples      []auditExample `json:"examples"`

	// highestOnTimeline is the highest epoch above the counter that is not of a
	// later timeline (0 when none): what per-job --fix raises the jobs to.
	highestOnTimeline int64
	// laterAbove counts the rows above the counter whose epoch is of a later
	// timeline.
	laterAbove int64
}

type auditFix struct {
	// Applied: the counter was moved (not when Note says why nothing was).
	Applied bool `json:"applied"`
	// From and To are the counter's Value (epochs) before and after.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// RawFrom and RawTo are the sequence's or the counter row's own value.
	RawFrom    int64  `json:"raw_from,omitempty"`
	RawTo      int64  `json:"raw_to,omitempty"`
	JobsRaised int64  `json:"jobs_raised,omitempty"`
	Note       string `json:"note,omitempty"`
	// RowsLeft counts the rows still above the counter: per-job epochs of a later
	// timeline, which raising the jobs would not make safe.
	RowsLeft int64 `json:"rows_left,omitempty"`
}

type auditReport struct {
	Counter       auditCounter `json:"counter"`
	Tables        []auditTable `json:"tables"`
	RowsAbove     int64        `json:"rows_above"`
	Highest       int64        `json:"highest_epoch"`
	NullEpochs    int64        `json:"null_epochs"`
	OldFormat     int64        `json:"rows_old_format"`
	LaterTimeline int64        `json:"rows_later_timeline"`
	Fix           *auditFix    `json:"fix,omitempty"`
}
