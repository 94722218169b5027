package audit

type auditCounter struct {
	Kind   string `json:"kind"` // sequence or jobs_table
	Name   string `json:"name"`
	Column string `json:"column,omitempty"`
	Value  int64  `json:"value"` // the highest epoch handed out so far

	oid       uint32
	increment int64
	max       int64
}

type auditExample struct {
	Key   string `json:"key"`
	Epoch int64  `json:"epoch"`
}

type auditTable struct {
	Table       string         `json:"table"`
	PolicyName  string         `json:"policy_name"`
	EpochColumn string         `json:"epoch_column"`
	Scanned     int64          `json:"rows_scanned"`
	Above       int64          `json:"rows_above"`
	Highest     *int64         `json:"highest_epoch"`
	NullEpochs  int64          `json:"null_epochs"`
	Examples    []auditExample `json:"examples"`
}

type auditFix struct {
	Applied    bool   `json:"applied"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
	JobsRaised int64  `json:"jobs_raised,omitempty"`
	Note       string `json:"note,omitempty"`
}

type auditReport struct {
	Counter    auditCounter `json:"counter"`
	Tables     []auditTable `json:"tables"`
	RowsAbove  int64        `json:"rows_above"`
	Highest    int64        `json:"highest_epoch"`
	NullEpochs int64        `json:"null_epochs"`
	Fix        *auditFix    `json:"fix,omitempty"`
}
