package demo

type demoStep struct {
	Step        string `json:"step"`
	Worker      string `json:"worker,omitempty"`
	Result      string `json:"result"`
	Epoch       int64  `json:"epoch,omitempty"`
	Quantity    *int64 `json:"quantity,omitempty"`
	Fenced      bool   `json:"fenced,omitempty"`
	StoredEpoch int64  `json:"stored_epoch,omitempty"`
}

type demoFencedWrite struct {
	Worker      string `json:"worker"`
	Job         int64  `json:"job"`
	Epoch       int64  `json:"epoch"`
	StoredEpoch int64  `json:"stored_epoch"`
	Cancelled   string `json:"handler_cancelled_with,omitempty"`
}

type demoRun struct {
	Driver       string            `json:"driver"`
	Final        int64             `json:"final_quantity"`
	Expected     int64             `json:"expected_quantity"`
	LostUpdate   bool              `json:"lost_update"`
	FencedWrites []demoFencedWrite `json:"fenced_writes"`
	Steps        []demoStep        `json:"steps"`
}

type demoReport struct {
	Prevented       bool      `json:"prevented"`
	Expected        int64     `json:"expected_quantity"`
	Runs            []demoRun `json:"runs"`
	FencedStatement string    `json:"fenced_statement"`
	Server          string    `json:"server"`
	LeaseMillis     int64     `json:"lease_ms"`
	DurationMillis  int64     `json:"duration_ms"`
}
