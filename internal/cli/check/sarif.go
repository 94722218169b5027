package check

import (
	"net/url"
	"path/filepath"
	"strings"

	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// SARIF 2.1.0, the subset code-scanning tools read: one run, the rules, results with
// a physical location, suppressed results marked as suppressed in source, and files
// that could not be checked as tool execution notifications.

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	ColumnKind  string            `json:"columnKind"`
	Results     []sarifResult     `json:"results"`
	Invocations []sarifInvocation `json:"invocations"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	HelpURI              string       `json:"helpUri"`
	ShortDescription     sarifMessage `json:"shortDescription"`
	FullDescription      sarifMessage `json:"fullDescription"`
	Help                 sarifMessage `json:"help"`
	DefaultConfiguration struct {
		Level string `json:"level"`
	} `json:"defaultConfiguration"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID       string             `json:"ruleId"`
	RuleIndex    int                `json:"ruleIndex"`
	Level        string             `json:"level"`
	Message      sarifMessage       `json:"message"`
	Locations    []sarifLocation    `json:"locations"`
	Suppressions []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
	EndLine     int `json:"endLine,omitempty"`
	EndColumn   int `json:"endColumn,omitempty"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

// SARIF is the SARIF log of findings, in the shape sqlfence check --format sarif
// prints.
func SARIF(findings []Finding) any {
	return toSARIF(&result{Findings: findings})
}

func toSARIF(res *result) *sarifLog {
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           "sqlfence",
			InformationURI: "https://github.com/sqlfence/sqlfence",
		}},
		ColumnKind: "unicodeCodePoints",
		Results:    []sarifResult{},
	}
	// The rules are the codes a finding can carry: refusals and the linter's own.
	index := map[string]int{}
	for _, r := range rulecode.All {
		if r.Kind != rulecode.KindRefused && r.Kind != rulecode.KindCheck {
			continue
		}
		help := "See " + rulecode.HelpURI(r.Code) + " for what to do."
		rule := sarifRule{ID: r.Code, HelpURI: rulecode.HelpURI(r.Code), ShortDescription: sarifMessage{r.Title},
			FullDescription: sarifMessage{string(r.Kind) + ": " + r.Title}, Help: sarifMessage{help}}
		rule.DefaultConfiguration.Level = "error"
		// SF805 is a warning: text built at run time may well be fenced; a team that
		// wants it to fail the build says so in its code-scanning settings.
		if r.Code == rulecode.CheckIgnoreNoWhy || r.Code == rulecode.CheckUnusedIgnore || r.Code == rulecode.DynamicWrite {
			rule.DefaultConfiguration.Level = "warning"
		}
		index[r.Code] = len(run.Tool.Driver.Rules)
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, rule)
	}
	add := func(f finding, suppressed bool) {
		r := sarifResult{
			RuleID:    f.Rule,
			RuleIndex: index[f.Rule],
			Level:     run.Tool.Driver.Rules[index[f.Rule]].DefaultConfiguration.Level,
			Message:   sarifMessage{f.Message},
			Locations: []sarifLocation{location(f.File, &sarifRegion{StartLine: f.Line, StartColumn: f.Column, EndLine: f.EndLine, EndColumn: f.EndColumn})},
		}
		if suppressed {
			r.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: f.Reason}}
		}
		run.Results = append(run.Results, r)
	}
	for _, f := range res.Findings {
		add(f, false)
	}
	for _, f := range res.Suppressed {
		add(f, true)
	}
	inv := sarifInvocation{ExecutionSuccessful: len(res.Errors) == 0, ToolExecutionNotifications: []sarifNotification{}}
	for _, e := range res.Errors {
		var region *sarifRegion
		if e.Line > 0 {
			region = &sarifRegion{StartLine: e.Line, StartColumn: e.Column}
		}
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{
			Level: "error", Message: sarifMessage{e.Message}, Locations: []sarifLocation{location(e.File, region)}})
	}
	run.Invocations = []sarifInvocation{inv}
	return &sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{run},
	}
}

// location names a file as a URI: relative paths stay relative (code scanning
// resolves them against the checkout), absolute ones become file:// URIs.
func location(path string, region *sarifRegion) sarifLocation {
	p := filepath.ToSlash(path)
	var uri string
	if filepath.IsAbs(path) {
		uri = (&url.URL{Scheme: "file", Path: p}).String()
	} else {
		p = strings.TrimPrefix(p, "./")
		uri = (&url.URL{Path: p}).String()
	}
	return sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: uri}, Region: region}}
}
