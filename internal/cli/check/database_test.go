package check

import (
	"testing"

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
	clitest.WantContains(t, "stdout", stdout, "sqlfence.yaml:3", "SF520", "did you mean inventory?",
		"sqlfence.yaml:4", "SF521", "ALTER TABLE public.ledger ADD COLUMN writer_epoch bigint NOT NULL DEFAULT 0")

	good := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables: [inventory]\n")
	stdout, stderr, code = cli(t, "--policy", good, "--dsn", dsn)
	clitest.WantCode(t, code, 0, stdout, stderr)
}
