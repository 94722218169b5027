package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDB(t)
	// A longer lease than the default keeps the story on time on a busy machine under -race.
	out, errOut, code := cli(t, "demo", "--dsn", dsn, "--json", "--lease", "2s")
	wantCode(t, code, exitOK, out, errOut)
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
	if rep.FencedStatement != "UPDATE inventory SET quantity = $2, writer_epoch = $3::bigint WHERE (sku = $1) AND inventory.writer_epoch < $3::bigint" {
		t.Errorf("fenced statement %q", rep.FencedStatement)
	}
	// The demo cleans up after itself in a database it was given.
	var schemas int
	pgConnect(t, dsn, nil).QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'sqlfence_demo%'").Scan(&schemas)
	if schemas != 0 {
		t.Errorf("%d demo schemas left behind", schemas)
	}
}

func TestDemoBadInput(t *testing.T) {
	t.Parallel()
	out, errOut, code := cli(t, "demo", "--dsn", silentServer(t), "--connect-timeout", "1s")
	wantCode(t, code, exitError, out, errOut)
	wantContains(t, "stderr", errOut, "sqlfence demo: cannot connect to database", "within 1s")

	out, errOut, code = cli(t, "demo", "--lease", "5ms")
	wantCode(t, code, exitError, out, errOut)
	wantContains(t, "stderr", errOut, "--lease must be between")

	out, errOut, code = cli(t, "demo", "extra")
	wantCode(t, code, exitError, out, errOut)
	wantContains(t, "stderr", errOut, `unexpected argument "extra"`)
}

// TestBinary runs the built command the way the README tells a user to.
func TestBinary(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)

	t.Run("demo", func(t *testing.T) {
		// The README's first command, with a throwaway PostgreSQL of its own — unless
		// the tests were pointed at an existing server.
		args := []string{"demo"}
		if dsn := os.Getenv(pgtest.EnvDSN); dsn != "" {
			args = append(args, "--dsn", pgtest.NewDB(t))
		}
		out, errOut, code := runBinary(t, bin, nil, args...)
		wantCode(t, code, exitOK, out, errOut)
		wantContains(t, "demo", out,
			"plain pgx", "sqlfence",
			"A is paused (SIGSTOP)",
			"wrote 7", "FENCED: row has epoch 3 > 1",
			"final count                           7                              5",
			"LOST UPDATE (+2 widgets)",
			"sqlfence prevented the lost update.")
	})
	t.Run("check", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "check", "--policy", checkPolicy, "testdata/sql", "testdata/go")
		wantCode(t, code, exitFindings, out, errOut)
		wantContains(t, "check", out, "testdata/sql/002_maintenance.sql:15:1: unfenced-write:", "testdata/go/repo.go:32:37: refused:")
		out, errOut, code = runBinary(t, bin, []string{"SQLFENCE_POLICY="}, "check", "testdata/sql")
		wantCode(t, code, exitError, out, errOut)
		wantContains(t, "check without a policy", errOut, "no policy")
		out, errOut, code = runBinary(t, bin, nil, "check", "--policy", checkPolicy, "testdata/broken/broken.sql")
		wantCode(t, code, exitError, out, errOut)
		wantContains(t, "check of an unparseable file", errOut, "broken.sql:2:23: error: syntax error")
	})
	t.Run("guard", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "guard", "--policy", checkPolicy)
		wantCode(t, code, exitOK, out, errOut)
		wantContains(t, "guard", out, "sqlfence.install_guard(NULL, 'inventory', 'writer_epoch', true)")
		out, errOut, code = runBinary(t, bin, nil, "guard", "--policy", checkPolicy, "--apply", "--dsn", silentServer(t), "--connect-timeout", "1s")
		wantCode(t, code, exitError, out, errOut)
		wantContains(t, "guard with a silent server", errOut, "cannot connect")
	})
	t.Run("audit", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, nil, "audit", "--policy", checkPolicy, "--dsn", silentServer(t), "--connect-timeout", "1s")
		wantCode(t, code, exitError, out, errOut)
		wantContains(t, "audit with a silent server", errOut, "cannot connect")
	})
}
