package audit

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

const auditSchema = `
CREATE SEQUENCE sqlfence_epoch;
SELECT setval('sqlfence_epoch', 10);
CREATE TABLE jobs (id int PRIMARY KEY, lease_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO jobs VALUES (1, 4), (2, 9), (3, 30);
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('widget', 1, 3), ('bolt', 1, 12), ('nut', 1, 15), ('washer', 1, 10);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int, total numeric, writer_epoch bigint) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_2025 PARTITION OF billing.invoices FOR VALUES FROM (0) TO (1000);
INSERT INTO billing.invoices SELECT g, 1, g % 10 FROM generate_series(1, 999) g;
`

const auditPolicy = `version: 1
tables:
  - name: inventory
  - name: billing.invoices
`

func TestMain(m *testing.M) { pgtest.Main(m) }

// cli runs sqlfence audit with args, as the program would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

func auditFixture(t *testing.T) (dsn, policy string) {
	t.Helper()
	dsn = pgtest.NewDB(t)
	raw := clitest.PGConnect(t, dsn, nil)
	if _, err := raw.Exec(t.Context(), auditSchema); err != nil {
		t.Fatal(err)
	}
	return dsn, clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", auditPolicy)
}

func TestAuditSequence(t *testing.T) {
	t.Parallel()
	dsn, policy := auditFixture(t)
	raw := clitest.PGConnect(t, dsn, nil)

	out, errOut, code := cli(t, "--policy", policy, "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit", out,
		"claim counter: sequence public.sqlfence_epoch, highest epoch handed out 10",
		"public.inventory                            4            2             15            0",
		"sku=nut (epoch 15); sku=bolt (epoch 12)",
		"billing.invoices_2025                     999            0              -            0",
		"2 rows in 1 table hold epochs above the counter (10), up to 15",
		"Run with --fix to move the counter to 15; the next claim then gets 16.")
	clitest.WantContains(t, "progress", errOut, "audit: public.inventory: 4 rows in", "2 above the counter")

	out, errOut, code = cli(t, "--policy", policy, "--dsn", dsn, "--json", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	if errOut != "" {
		t.Errorf("--quiet printed progress: %s", errOut)
	}
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.RowsAbove != 2 || rep.Highest != 15 || rep.Counter.Value != 10 || len(rep.Tables) != 2 ||
		len(rep.Tables[0].Examples) != 2 || rep.Tables[0].Examples[0] != (auditExample{Key: "sku=nut", Epoch: 15}) {
		t.Errorf("JSON report: %+v", rep)
	}

	out, errOut, code = cli(t, "--policy", policy, "--dsn", dsn, "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit --fix", out, "Fixed, in one transaction: sequence public.sqlfence_epoch moved from 10 to 15; the next claim gets 16. No row was changed.")
	var next int64
	if err := raw.QueryRow(t.Context(), "SELECT nextval('sqlfence_epoch')").Scan(&next); err != nil || next != 16 {
		t.Errorf("nextval after --fix: %d, %v", next, err)
	}
	var epoch int64
	raw.QueryRow(t.Context(), "SELECT writer_epoch FROM inventory WHERE sku = 'nut'").Scan(&epoch)
	if epoch != 15 {
		t.Errorf("--fix changed a row: epoch %d", epoch)
	}
	out, errOut, code = cli(t, "--policy", policy, "--dsn", dsn, "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit after --fix", out, "No row holds an epoch above the counter (16).")
}

func TestAuditJobsTable(t *testing.T) {
	t.Parallel()
	dsn, policy := auditFixture(t)
	raw := clitest.PGConnect(t, dsn, nil)
	raw.Exec(t.Context(), "UPDATE inventory SET writer_epoch = 40 WHERE sku = 'nut'")

	out, errOut, code := cli(t, "--policy", policy, "--dsn", dsn, "--jobs-table", "jobs", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit --jobs-table", out, "claim counter: public.jobs.lease_epoch (per-job epochs), highest epoch of any job 30",
		"1 row in 1 table holds epochs above the counter (30), up to 40",
		"a row above its own job's epoch but not above 30 is not found",
		"every job's next claim then gets at least 41")

	out, errOut, code = cli(t, "--policy", policy, "--dsn", dsn, "--jobs-table", "jobs", "--epoch-column", "lease_epoch", "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit --jobs-table --fix", out, "raised public.jobs.lease_epoch to 40 on 3 jobs", "lost its claim")
	var low int
	raw.QueryRow(t.Context(), "SELECT count(*) FROM jobs WHERE lease_epoch < 40").Scan(&low)
	if low != 0 {
		t.Errorf("%d jobs still below the highest stored epoch", low)
	}
}

// Large tables are read in batches, with progress per batch.
func TestAuditProgress(t *testing.T) {
	t.Parallel()
	dsn, policy := auditFixture(t)
	raw := clitest.PGConnect(t, dsn, nil)
	if _, err := raw.Exec(t.Context(), "INSERT INTO inventory SELECT 'sku' || g, 1, 5 FROM generate_series(1, 3000) g"); err != nil {
		t.Fatal(err)
	}
	var version int
	raw.QueryRow(t.Context(), "SELECT current_setting('server_version_num')::int").Scan(&version)
	out, errOut, code := cli(t, "--policy", policy, "--dsn", dsn, "--batch-pages", "4")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	if version >= 140000 {
		clitest.WantContains(t, "progress", errOut, "reading in batches of 4", "% (4/", "100% (")
	}
	clitest.WantContains(t, "audit", out, "public.inventory                         3004            2             15")
}

func TestAuditNullEpochs(t *testing.T) {
	t.Parallel()
	dsn, policy := auditFixture(t)
	raw := clitest.PGConnect(t, dsn, nil)
	raw.Exec(t.Context(), "CREATE TABLE billing.invoices_more PARTITION OF billing.invoices FOR VALUES FROM (1000) TO (10000)")
	raw.Exec(t.Context(), "INSERT INTO billing.invoices VALUES (5000, 1, NULL)")
	out, errOut, code := cli(t, "--policy", policy, "--dsn", dsn, "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit", out, "billing.invoices_more", "1 row has a NULL epoch, which no fenced write ever matches")
}

func TestAuditBadInput(t *testing.T) {
	t.Parallel()
	dsn, policy := auditFixture(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing policy", []string{"--policy", filepath.Join(dir, "nope.yaml"), "--dsn", dsn}, []string{"nope.yaml does not exist"}},
		{"no DSN", []string{"--policy", policy}, []string{"no database: give --dsn"}},
		{"a DSN that does not answer", []string{"--policy", policy, "--dsn", clitest.SilentServer(t), "--connect-timeout", "1s"},
			[]string{"cannot connect to database", "within 1s"}},
		{"an unparseable DSN", []string{"--policy", policy, "--dsn", "postgres://[::1"}, []string{"bad --dsn"}},
		{"both counters", []string{"--policy", policy, "--dsn", dsn, "--sequence", "s", "--jobs-table", "jobs"}, []string{"not both"}},
		{"missing sequence", []string{"--policy", policy, "--dsn", dsn, "--sequence", "claims_seq"}, []string{"no sequence claims_seq"}},
		{"missing jobs table", []string{"--policy", policy, "--dsn", dsn, "--jobs-table", "queue"}, []string{"no table queue"}},
		{"missing jobs column", []string{"--policy", policy, "--dsn", dsn, "--jobs-table", "jobs", "--epoch-column", "epoch"}, []string{"has no column epoch"}},
		{"a policy table the database does not have", []string{"--policy", clitest.WriteFile(t, dir, "p.yaml", "version: 1\ntables:\n  - name: ledger\n"), "--dsn", dsn},
			[]string{"table ledger (policy line 3) does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, tc.args...)
			clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
			clitest.WantContains(t, "stderr", errOut, tc.want...)
			if strings.Contains(errOut, "panic") {
				t.Error(errOut)
			}
		})
	}
}
