package engine

import (
	"testing"
)

// The policies the engine's tests decide under, built as the root package compiles
// them (TestCompiledTestPolicies there holds them equal to the YAML they stand for).

// testPolicy is ../../testdata/sqlfence.yaml: inventory, billing.invoices
// (repeatable), reports (epoch column fence_epoch), the function billing.recalc and
// the claim table jobs.
func testPolicy(tb testing.TB) *Policy {
	tb.Helper()
	return (&Policy{
		Source: "../../testdata/sqlfence.yaml", EpochColumn: "writer_epoch", Mode: ModeStrict, Stale: StaleRow, Enforce: EnforceOn,
		Tables: []Table{
			{QualifiedName: QualifiedName{Name: "inventory"}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: 6},
			{QualifiedName: QualifiedName{Schema: "billing", Name: "invoices"}, EpochColumn: "writer_epoch", Mode: ModeRepeatable, Line: 7},
			{QualifiedName: QualifiedName{Name: "reports"}, EpochColumn: "fence_epoch", Mode: ModeStrict, Line: 9},
		},
		Functions: []QualifiedName{{Schema: "billing", Name: "recalc"}},
		Claims:    []ClaimTable{{QualifiedName: QualifiedName{Name: "jobs"}, EpochColumn: "lease_epoch", StatusColumn: "status", Line: 14}},
	}).Index()
}

// spellingPolicy protects names that exercise every identifier rule the pre-check
// relies on: plain, schema-qualified, quoted mixed case, a quote inside the name,
// non-ASCII, plus a listed function and a claim table.
func spellingPolicy(tb testing.TB) *Policy {
	tb.Helper()
	table := func(schema, name string, line int) Table {
		return Table{QualifiedName: QualifiedName{Schema: schema, Name: name}, EpochColumn: "writer_epoch", Mode: ModeStrict, Line: line}
	}
	return (&Policy{
		Source: "<test>", EpochColumn: "writer_epoch", Mode: ModeStrict, Stale: StaleRow, Enforce: EnforceOn,
		Tables: []Table{
			table("", "inventory", 4), table("billing", "invoices", 5), table("", "Orders", 6),
			table("", `odd"name`, 7), table("", "café", 8),
		},
		Functions: []QualifiedName{{Schema: "billing", Name: "recalc"}},
		Claims:    []ClaimTable{{QualifiedName: QualifiedName{Name: "jobs"}, EpochColumn: "lease_epoch", StatusColumn: "status", Line: 12}},
	}).Index()
}
