package check

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestCheckDSN: check --dsn reports the policy's problems against the database with
// the driver's codes, at their lines of the policy file, and exits 1.
func TestCheckDSN(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	raw := clitest.PGConnect(t, dsn, nil)
	if _, err := raw.Exec(t.Context(), `CREATE TABLE inventory (sku text, writer_epoch bigint NOT NULL DEFAULT 0);
		CREATE TABLE ledger (id int);`); err != nil {
		t.Fatal(err)
	}
	policy := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables:\n  - name: inventroy\n  - name: ledger\n")
	stdout, stderr, code := cli(t, "--policy", policy, "--dsn", dsn)
	clitest.WantCode(t, code, 1, stdout, stderr)
	// A policy line has no column: file:line, never file:line:0.
	clitest.WantContains(t, "stdout", stdout, "sqlfence.yaml:3: SF520", "did you mean inventory?",
		"sqlfence.yaml:4: SF521", "ALTER TABLE public.ledger ADD COLUMN writer_epoch bigint NOT NULL DEFAULT 0")

	if strings.Contains(stdout, ":0:") {
		t.Errorf("a position with column 0:\n%s", stdout)
	}

	good := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables: [inventory]\n")
	stdout, stderr, code = cli(t, "--policy", good, "--dsn", dsn)
	clitest.WantCode(t, code, 0, stdout, stderr)
}

// TestCheckMigrations: with --migrations the policy is checked against the schema the
// migrations make on an empty database (their down halves not applied), which is
// left empty; without --dsn the flag is a usage error.
func TestCheckMigrations(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	dir := t.TempDir()
	clitest.WriteFile(t, dir, "000001_inventory.up.sql", "CREATE TABLE inventory (sku text, writer_epoch bigint NOT NULL DEFAULT 0);")
	clitest.WriteFile(t, dir, "000001_inventory.down.sql", "DROP TABLE inventory;")
	clitest.WriteFile(t, dir, "000002_ledger.sql", "-- +goose Up\nCREATE TABLE ledger (id int);\n-- +goose Down\nDROP TABLE ledger;\n")
	policy := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables:\n  - name: inventory\n  - name: ledger\n")
	stdout, stderr, code := cli(t, "--policy", policy, "--dsn", dsn, "--migrations", dir)
	clitest.WantCode(t, code, 1, stdout, stderr)
	clitest.WantContains(t, "stdout", stdout, "sqlfence.yaml:4", "SF521", "ALTER TABLE public.ledger ADD COLUMN writer_epoch")
	if strings.Contains(stdout, "SF520") {
		t.Errorf("a table the migrations create reported missing:\n%s", stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var n int
	if err := clitest.PGConnect(t, dsn, nil).QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('inventory', 'ledger')`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("check --migrations left %d tables in the database", n)
	}

	stdout, stderr, code = cli(t, "--policy", policy, "--migrations", dir, "migrations/")
	clitest.WantCode(t, code, 2, stdout, stderr)
	clitest.WantContains(t, "stderr", stderr, "--migrations needs --dsn")
}
