package analyzer_test

// -dsn: statements decided with a database's catalog, as the driver decides them.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/contrib/analyzer"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// catalogSchema: inventory partitioned, a function that reads it, one that writes it.
const catalogSchema = `
	CREATE TABLE inventory (sku text, quantity int, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY LIST (sku);
	CREATE TABLE inventory_a PARTITION OF inventory FOR VALUES IN ('a');
	CREATE FUNCTION stock_of(s text) RETURNS int LANGUAGE sql AS 'SELECT quantity FROM inventory WHERE sku = s';
	CREATE FUNCTION restock_all() RETURNS void LANGUAGE sql AS 'UPDATE inventory SET quantity = 100';`

// TestCatalog: with -dsn the partition's TRUNCATE is reported and the reading
// function is not — the reverse of the text alone, where inventory_a is not
// protected and every unknown function is refused (SF413).
func TestCatalog(t *testing.T) {
	dsn := pgtest.NewDB(t)
	conn := clitest.PGConnect(t, dsn, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, catalogSchema); err != nil {
		t.Fatal(err)
	}
	a := analyzer.New(loadPolicy(t, "testdata/catalog.yaml"))
	if err := a.Flags.Set("dsn", dsn); err != nil {
		t.Fatal(err)
	}
	analysistest.Run(t, analysistest.TestData(), a, "catalogapp")
}

// TestBenignCorpusCatalog: the benign corpus's files that pass the driver only with
// the catalog (--! policy: catalog: extensions' own functions, materialized views)
// draw no report with -dsn on a database set up as the file says.
func TestBenignCorpusCatalog(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/benign/*.sql")
	var stmts []stmt
	setup := `CREATE SCHEMA billing;
		CREATE TABLE inventory (sku text, quantity int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE billing.invoices (id int, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE reports (id int, body text, fence_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE jobs (id int, status text, lease_epoch bigint NOT NULL DEFAULT 0);`
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(data)
		if !strings.Contains(src, "\n--! policy: catalog\n") {
			continue
		}
		if _, after, ok := strings.Cut(src, "\n--! setup\n"); ok {
			block, _, _ := strings.Cut(after, "\n--! name:")
			setup += "\n" + block
		}
		stmts = append(stmts, corpusStatements(t, f)...)
	}
	if len(stmts) < 5 {
		t.Fatalf("only %d statements under --! policy: catalog: the corpus is no longer read", len(stmts))
	}
	dsn := pgtest.NewDB(t)
	conn := clitest.PGConnect(t, dsn, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := conn.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	pol, err := sqlfence.ParsePolicy([]byte(benignPolicy+"catalog_refresh: 1h\n"), "<benign>")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeApplication(t, dir, stmts, func(stmt) string { return "" }) // any report fails the test
	a := analyzer.New(pol)
	if err := a.Flags.Set("dsn", dsn); err != nil {
		t.Fatal(err)
	}
	analysistest.Run(t, dir, a, "corpus")
	t.Logf("%d statements decided with the catalog, none reported", len(stmts))
}
