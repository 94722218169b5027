package pgquery

import (
	"errors"
	"testing"
	"time"
)

// TestBuild: the build parses, scans and deparses, and reports its syntax errors as
// Error (which internal/cli/check reads for the cursor position). It logs how long
// the first parse took: with the WebAssembly build, that includes compiling the
// module (go test -v -run TestBuild ./internal/pgtree/pgquery, with and without
// CGO_ENABLED=0).
func TestBuild(t *testing.T) {
	start := time.Now()
	tree, err := Parse("UPDATE inventory SET quantity = 1 WHERE sku = 'a'")
	t.Logf("%s build (%s): first parse %v", Build, Module, time.Since(start).Round(time.Millisecond))
	if err != nil || len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetUpdateStmt() == nil {
		t.Fatalf("Parse = %v, %v", tree, err)
	}
	if tree.Version < 170000 || tree.Version >= 180000 {
		t.Errorf("parser version %d, want PostgreSQL 17's grammar", tree.Version)
	}
	out, err := Deparse(tree)
	if err != nil || out != "UPDATE inventory SET quantity = 1 WHERE sku = 'a'" {
		t.Errorf("Deparse = %q, %v", out, err)
	}
	scan, err := Scan("SELECT 1")
	if err != nil || len(scan.Tokens) != 2 {
		t.Errorf("Scan = %v, %v", scan, err)
	}
	_, err = Parse("SELECT FROM WHERE")
	var pe *Error
	if !errors.As(err, &pe) || pe.Cursorpos == 0 {
		t.Errorf("syntax error = %#v, want an *Error with the cursor position", err)
	}
}
