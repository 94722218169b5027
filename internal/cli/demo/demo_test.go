package demo

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) {
	// The demo re-executes its own binary as its workers; under go test that binary
	// is this test binary, so it has to be able to be a worker too.
	if len(os.Args) > 1 && os.Args[1] == WorkerCommand {
		os.Exit(RunWorker(os.Args[2:], os.Stdout, os.Stderr))
	}
	pgtest.Main(m)
}

// cli runs sqlfence demo with args, as the program would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

func TestDemo(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	// A longer lease than the default keeps the story on time on a busy machine under -race.
	out, errOut, code := cli(t, "--dsn", dsn, "--json", "--lease", "2s")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	var rep demoReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !rep.Prevented || rep.Expected != 5 || len(rep.Runs) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	plain, fenced := rep.Runs[0], rep.Runs[1]
	if plain.Driver != "pgx" || plain.Final != 7 || !plain.LostUpdate || len(plain.FencedWrites) != 0 {
		t.Errorf("plain run: %+v", plain)
	}
	if fenced.Driver != "sqlfence" || fenced.Final != 5 || fenced.LostUpdate || len(fenced.FencedWrites) != 1 {
		t.Fatalf("sqlfence run: %+v", fenced)
	}
	fw := fenced.FencedWrites[0]
	if fw.Worker != "A" || fw.Epoch != 1 || fw.StoredEpoch != 3 || !strings.Contains(fw.Cancelled, "fenced") {
		t.Errorf("fenced write: %+v", fw)
	}
	// Both runs tell the same story up to A's write.
	for i, s := range plain.Steps {
		f := fenced.Steps[i]
		if s.Step != f.Step {
			t.Errorf("step %d: %q vs %q", i+1, s.Step, f.Step)
		}
		if i < 11 && s.Result != f.Result && !strings.Contains(s.Step, "lease runs out") {
			t.Errorf("step %d (%s): %q vs %q", i+1, s.Step, s.Result, f.Result)
		}
	}
	if got := plain.Steps[3].Result; got != "refused: epoch 1 holds it" {
		t.Errorf("B's claim while A's lease is live: %q", got)
	}
	if rep.FencedStatement != "/*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint" {
		t.Errorf("fenced statement %q", rep.FencedStatement)
	}
	// The demo cleans up after itself in a database it was given.
	var schemas int
	clitest.PGConnect(t, dsn, nil).QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'sqlfence_demo%'").Scan(&schemas)
	if schemas != 0 {
		t.Errorf("%d demo schemas left behind", schemas)
	}
}

func TestDemoBadInput(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t, "--dsn", clitest.SilentServer(t), "--connect-timeout", "1s")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, "sqlfence demo: cannot connect to database", "within 1s")

	out, errOut, code = cli(t, "--lease", "5ms")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, "--lease must be between")

	out, errOut, code = cli(t, "extra")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, `unexpected argument "extra"`)
}

// TestDemoGuardedDatabase: on a database whose guard covers every table named
// inventory, the demo stops before its workers start and says what to do, not with
// the guard's rejection of its plain-pgx writes.
func TestDemoGuardedDatabase(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	if _, err := clitest.PGConnect(t, dsn, nil).Exec(t.Context(), "CREATE TABLE inventory (sku text PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	policy := clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", "version: 1\ntables: [inventory]\n")
	out, errOut, code := clitest.Run(t, guard.Run, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	out, errOut, code = cli(t, "--dsn", dsn, "--lease", "2s")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, "sqlfence guard covers the demo's table inventory", "names it without a schema",
		"Run the demo on a database without the guard: `sqlfence demo` alone starts a throwaway server")
	if strings.Contains(errOut, "SQLSTATE") {
		t.Errorf("the guard's raw error: %s", errOut)
	}
}
