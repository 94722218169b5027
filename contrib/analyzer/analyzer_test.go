package analyzer_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/contrib/analyzer"
)

// testPolicy is the core module's test policy: inventory, billing.invoices and
// reports protected, billing.recalc listed, jobs a claim table.
func testPolicy(t testing.TB) *sqlfence.Policy {
	t.Helper()
	pol, err := sqlfence.LoadPolicy("../../testdata/sqlfence.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestApplication runs the analyzer over testdata/src/app, an application that uses
// each library the analyzer knows, against stubs of those libraries; the expected
// reports are the // want comments.
func TestApplication(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), analyzer.New(testPolicy(t)), "app", "app/pgxdb")
}
