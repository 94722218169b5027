package analyzer_test

// -dsn: statements decided with a database's catalog, as the driver decides them.

import (
	"context"
	"testing"
	"time"

	"golang.org/x/tools/go/analysis/analysistest"

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
