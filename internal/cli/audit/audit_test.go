package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgcatalog"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// The fixture's epochs are all of the format before timelines (below 2^32), as a
// database upgraded to timeline epochs holds them; tests add epochs of the server's
// timeline and of a later one.
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

// statementTimeout bounds every statement of a test, the command's included: the
// fixture's DSN carries it to the server.
const statementTimeout = 30 * time.Second

func TestMain(m *testing.M) { pgtest.Main(m) }

// cli runs sqlfence audit with args, as the program would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

// deadline is a context for one statement of the test itself.
func deadline(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), statementTimeout)
	t.Cleanup(cancel)
	return ctx
}

func exec(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(deadline(t), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(deadline(t), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// fixture is a database with the audit schema: its DSN (every statement through it
// under statementTimeout, the connection under a connect timeout), the policy file,
// a connection and the server's write timeline (1 on a fresh cluster).
type fixture struct {
	dsn, policy string
	raw         *pgx.Conn
	tl          int64
}

func auditFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dsn: pgtest.NewDB(t)}
	for k, v := range map[string]string{"connect_timeout": "10", "statement_timeout": "30s", "lock_timeout": "30s"} {
		f.dsn = cmdutil.WithParam(f.dsn, k, v)
	}
	f.raw = clitest.PGConnect(t, f.dsn, nil)
	exec(t, f.raw, auditSchema)
	f.tl = queryInt(t, f.raw, "SELECT "+pgcatalog.WriteTimelineSQL)
	if f.tl != 1 {
		t.Logf("the server writes on timeline %d, not a fresh cluster's 1: epochs are made relative to it", f.tl)
	}
	f.policy = clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", auditPolicy)
	return f
}

// epoch is the epoch a counter at n hands out on timeline tl.
func epoch(tl, n int64) int64 { return tl<<pgcatalog.EpochShift + n }

// highestRow is the highest epoch of any protected row.
func (f *fixture) highestRow(t *testing.T) int64 {
	t.Helper()
	return queryInt(t, f.raw, "SELECT max(e) FROM (SELECT writer_epoch FROM inventory UNION ALL SELECT writer_epoch FROM billing.invoices) x (e)")
}

// addEpochs adds inventory rows: one of the server's timeline below the counter at
// 10, one of it above, one of the timeline after next above. It returns the two
// above, highest first.
func (f *fixture) addEpochs(t *testing.T) (later, above int64) {
	t.Helper()
	later, above = epoch(f.tl+2, 7), epoch(f.tl, 15)
	exec(t, f.raw, "INSERT INTO inventory VALUES ('drawn', 1, $1), ('new-hi', 1, $2), ('restored', 1, $3)", epoch(f.tl, 5), above, later)
	return later, above
}

// An upgraded database: every epoch is of the old format, below every epoch drawn
// now, and nothing is to do.
func TestAuditOldFormat(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit", out,
		fmt.Sprintf("claim counter: sequence public.sqlfence_epoch at 10 on the server's timeline %d: highest epoch handed out %d (%d<<32 + 10)", f.tl, epoch(f.tl, 10), f.tl),
		"TABLE                                    ROWS        ABOVE  HIGHEST EPOCH   NULL EPOCH   OLD FORMAT LATER TIMELINE",
		"public.inventory                            4            0             15            0            4              0",
		// The "HIGHEST EPOCH -" on a table that holds epochs.
		"billing.invoices_2025                     999            0              9            0          999              0",
		fmt.Sprintf("No row holds an epoch above the counter (%d).", epoch(f.tl, 10)),
		"1003 rows hold epochs of the format before timelines (below 2^32 = 4294967296), drawn before the upgrade",
		"no claim drawn from now on is fenced on them. Nothing to do.")
	clitest.WantContains(t, "progress", errOut, "audit: public.inventory: 4 rows in", "0 above the counter")

	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit --jobs-table", out,
		fmt.Sprintf("claim counter: public.jobs.lease_epoch (per-job epochs), highest epoch of any job 30; on the server's timeline %d every job's next claim is above %d", f.tl, epoch(f.tl, 0)),
		"1003 rows hold epochs of the format before timelines")
}

func TestAuditSequence(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	later, above := f.addEpochs(t)
	counter := epoch(f.tl, 10)

	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn)
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit", out,
		fmt.Sprintf("public.inventory                            7            2    %d            0            4              1", later),
		fmt.Sprintf("sku=restored (epoch %d, timeline %d); sku=new-hi (epoch %d, timeline %d)", later, f.tl+2, above, f.tl),
		fmt.Sprintf("2 rows in 1 table hold epochs above the counter (%d), up to %d", counter, later),
		fmt.Sprintf("Run with --fix to move the counter to %d (the sequence to %d); the next claim then gets %d.", later, later-epoch(f.tl, 0), later+1),
		"1003 rows hold epochs of the format before timelines",
		fmt.Sprintf("1 row in 1 table holds an epoch of a later timeline than the server's %d (up to timeline %d): the data comes from a cluster further along its history", f.tl, f.tl+2),
		"--fix moves the counter past it, as past any row above it.")
	clitest.WantContains(t, "progress", errOut, "audit: public.inventory: 7 rows in", "2 above the counter")

	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--json", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	if errOut != "" {
		t.Errorf("--quiet printed progress: %s", errOut)
	}
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.RowsAbove != 2 || rep.Highest != later || rep.OldFormat != 1003 || rep.LaterTimeline != 1 ||
		rep.Counter.Kind != kindSequence || rep.Counter.Name != "public.sqlfence_epoch" || rep.Counter.Timeline != f.tl || rep.Counter.Raw != 10 || rep.Counter.Value != counter ||
		len(rep.Tables) != 2 || len(rep.Tables[0].Examples) != 2 || rep.Tables[0].Examples[0] != (auditExample{Key: "sku=restored", Epoch: later}) ||
		rep.Tables[1].Highest == nil || *rep.Tables[1].Highest != 9 {
		t.Errorf("JSON report: %+v", rep)
	}

	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit --fix", out, fmt.Sprintf(
		"Fixed, in one transaction: sequence public.sqlfence_epoch moved from 10 to %d (the highest epoch handed out from %d to %d, on timeline %d); the next claim gets %d. No row was changed.",
		later-epoch(f.tl, 0), counter, later, f.tl, later+1))
	// The next epoch a claim draws, as GlobalEpoch draws it.
	next := queryInt(t, f.raw, "SELECT "+pgcatalog.EpochFloorSQL+" + nextval('sqlfence_epoch')")
	if highest := f.highestRow(t); next <= highest || next != later+1 {
		t.Errorf("the epoch drawn after --fix is %d, want %d, above every row (the highest %d)", next, later+1, highest)
	}
	if e := queryInt(t, f.raw, "SELECT writer_epoch FROM inventory WHERE sku = 'restored'"); e != later {
		t.Errorf("--fix changed a row: epoch %d", e)
	}
	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit after --fix", out,
		fmt.Sprintf("No row holds an epoch above the counter (%d).", next),
		"The counter is past it: its epochs read as a later timeline's too")
}

// A counter table as the claim helpers create it for CounterEpoch, with the trigger
// that lets it only grow.
func TestAuditCounterTable(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	jobs, err := claim.NewJobs(claim.JobsConfig{Table: "counter_jobs", Epochs: claim.CounterEpoch})
	if err != nil {
		t.Fatal(err)
	}
	exec(t, f.raw, jobs.Schema())
	exec(t, f.raw, "UPDATE "+claim.DefaultCounter+" SET value = 10")
	later, above := f.addEpochs(t)
	counter := epoch(f.tl, 10)

	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn, "--counter", claim.DefaultCounter, "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit --counter", out,
		fmt.Sprintf("claim counter: counter table public.sqlfence_epoch_counter at 10 on the server's timeline %d: highest epoch handed out %d", f.tl, counter),
		fmt.Sprintf("sku=restored (epoch %d, timeline %d); sku=new-hi (epoch %d, timeline %d)", later, f.tl+2, above, f.tl),
		fmt.Sprintf("2 rows in 1 table hold epochs above the counter (%d), up to %d", counter, later),
		fmt.Sprintf("Run with --fix to move the counter to %d (the counter table to %d); the next claim then gets %d.", later, later-epoch(f.tl, 0), later+1),
		"--fix moves the counter past it, as past any row above it.")

	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--counter", claim.DefaultCounter, "--fix", "--quiet", "--json")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := (auditFix{Applied: true, From: counter, To: later, RawFrom: 10, RawTo: later - epoch(f.tl, 0)}); rep.Fix == nil || *rep.Fix != want {
		t.Errorf("--fix reported %+v, want %+v", rep.Fix, want)
	}
	// The next epoch a claim draws, as CounterEpoch draws it.
	next := queryInt(t, f.raw, "UPDATE "+claim.DefaultCounter+" SET value = value + 1 WHERE one RETURNING "+pgcatalog.EpochFloorSQL+" + value")
	if highest := f.highestRow(t); next <= highest || next != later+1 {
		t.Errorf("the epoch drawn after --fix is %d, want %d, above every row (the highest %d)", next, later+1, highest)
	}
	// --fix went through the trigger, which still refuses a counter moved back.
	if _, err := f.raw.Exec(deadline(t), "UPDATE "+claim.DefaultCounter+" SET value = 10"); err == nil || !strings.Contains(err.Error(), "only grows") {
		t.Errorf("moving the counter back after --fix: %v, want the trigger's refusal", err)
	}
	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--counter", claim.DefaultCounter, "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit after --fix", out, fmt.Sprintf("No row holds an epoch above the counter (%d).", next))
}

func TestAuditJobsTable(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	above := epoch(f.tl, 40)
	exec(t, f.raw, "UPDATE inventory SET writer_epoch = $1 WHERE sku = 'nut'", above)
	floor := epoch(f.tl, 0)

	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit --jobs-table", out, "claim counter: public.jobs.lease_epoch (per-job epochs), highest epoch of any job 30",
		fmt.Sprintf("1 row in 1 table holds epochs above the counter (%d), up to %d", floor, above),
		fmt.Sprintf("a row above its own job's epoch but not above %d is not found", floor),
		fmt.Sprintf("every job's next claim then gets at least %d", above+1))

	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--epoch-column", "lease_epoch", "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "audit --jobs-table --fix", out, fmt.Sprintf("raised public.jobs.lease_epoch to %d on 3 jobs", above), "lost its claim")
	// Every job's next epoch, as PerJobEpoch draws it.
	if next := queryInt(t, f.raw, "SELECT min(greatest(lease_epoch + 1, "+pgcatalog.EpochFloorSQL+" + 1)) FROM jobs"); next <= f.highestRow(t) {
		t.Errorf("a job's next epoch after --fix is %d, not above every row", next)
	}
}

// Per-job epochs of a later timeline cannot be fixed by raising the jobs: --fix raises
// them past the rows of the server's timeline only, and says what to do.
func TestAuditJobsLaterTimeline(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	onTL, later := epoch(f.tl, 40), epoch(f.tl+2, 5)
	exec(t, f.raw, "UPDATE inventory SET writer_epoch = $1 WHERE sku = 'nut'", onTL)
	exec(t, f.raw, "UPDATE inventory SET writer_epoch = $1 WHERE sku = 'bolt'", later)

	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit --jobs-table --fix", out,
		fmt.Sprintf("raised public.jobs.lease_epoch to %d on 3 jobs", onTL),
		"1 row is still above the counter: its epoch is of a later timeline, which --fix leaves",
		fmt.Sprintf("1 row in 1 table holds an epoch of a later timeline than the server's %d (up to timeline %d)", f.tl, f.tl+2),
		"Per-job epochs cannot be moved past a later timeline by raising a counter",
		"a failover on this cluster would not raise it",
		"until the cluster's timeline passes the job's",
		"switch the jobs to a sequence (GlobalEpoch) or a counter table (CounterEpoch)",
		fmt.Sprintf("set every epoch of %d or more (timeline %d's floor), in public.jobs.lease_epoch and in the protected rows, to %d", epoch(f.tl+1, 0), f.tl+1, epoch(f.tl, 0)))
	if high := queryInt(t, f.raw, "SELECT max(lease_epoch) FROM jobs"); high != onTL {
		t.Errorf("--fix raised the jobs to %d, want %d: not to a later timeline", high, onTL)
	}

	// A restored job holding an epoch of a later timeline, and a row above it: the
	// counter is that job's epoch, and --fix has nothing it can raise.
	exec(t, f.raw, "UPDATE jobs SET lease_epoch = $1 WHERE id = 3", later-2)
	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--fix", "--quiet", "--json")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	var rep auditReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Counter.Value != later-2 || rep.Counter.JobsLaterTimeline != 1 || len(rep.Counter.LaterJobs) != 1 ||
		rep.Counter.LaterJobs[0] != (auditExample{Key: "id=3", Epoch: later - 2}) ||
		rep.RowsAbove != 1 || rep.Fix == nil || rep.Fix.Applied || rep.Fix.RowsLeft != 1 {
		t.Errorf("JSON report: %+v, fix %+v", rep, rep.Fix)
	}
	out, errOut, code = cli(t, "--policy", f.policy, "--dsn", f.dsn, "--jobs-table", "jobs", "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit --jobs-table --fix", out,
		"Fixed nothing: every row above the counter holds an epoch of a later timeline",
		fmt.Sprintf("1 job of public.jobs holds an epoch of a later timeline than the server's %d: id=3 (epoch %d, timeline %d)", f.tl, later-2, f.tl+2))
}

// Large tables are read in batches, with progress per batch.
func TestAuditProgress(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	exec(t, f.raw, "INSERT INTO inventory SELECT 'sku' || g, 1, 5 FROM generate_series(1, 3000) g")
	version := queryInt(t, f.raw, "SELECT current_setting('server_version_num')::int")
	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn, "--batch-pages", "4")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	if version >= 140000 {
		clitest.WantContains(t, "progress", errOut, "reading in batches of 4", "% (4/", "100% (")
	}
	clitest.WantContains(t, "audit", out, "public.inventory                         3004            0             15            0         3004              0")
}

func TestAuditNullEpochs(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	exec(t, f.raw, "CREATE TABLE billing.invoices_more PARTITION OF billing.invoices FOR VALUES FROM (1000) TO (10000)")
	exec(t, f.raw, "INSERT INTO billing.invoices VALUES (5000, 1, NULL)")
	out, errOut, code := cli(t, "--policy", f.policy, "--dsn", f.dsn, "--fix", "--quiet")
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	clitest.WantContains(t, "audit", out, "billing.invoices_more", "1 row has a NULL epoch, which no fenced write ever matches")
	// An empty partition, or one of NULLs only, holds no epoch.
	clitest.WantContains(t, "audit", out, "billing.invoices_more                       1            0              -            1            0              0")
}

// Audit compares with the epochs the primary hands out: a standby is refused.
func TestPrimaryTimeline(t *testing.T) {
	_, err := primaryTimeline(pgcatalog.Position{Standby: true, Timeline: 2, LSN: 0x3000060})
	if err == nil || !strings.Contains(err.Error(), "the server is a standby (standby on timeline 2 at 0/3000060, in recovery): audit must run on the primary") {
		t.Errorf("a standby: %v", err)
	}
	for _, tl := range []int64{0, 1 << 31} {
		if _, err := primaryTimeline(pgcatalog.Position{Timeline: tl}); err == nil {
			t.Errorf("timeline %d taken", tl)
		}
	}
	if tl, err := primaryTimeline(pgcatalog.Position{Timeline: 7}); tl != 7 || err != nil {
		t.Errorf("a primary on timeline 7: %d, %v", tl, err)
	}
}

func TestAuditBadInput(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	exec(t, f.raw, "CREATE TABLE empty_counter (one bool PRIMARY KEY DEFAULT true CHECK (one), value bigint NOT NULL)")
	dsn, policy := f.dsn, f.policy
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
		{"two counters", []string{"--policy", policy, "--dsn", dsn, "--sequence", "s", "--jobs-table", "jobs"}, []string{"not several"}},
		{"three counters", []string{"--policy", policy, "--dsn", dsn, "--sequence", "s", "--counter", "c", "--jobs-table", "jobs"}, []string{"not several"}},
		{"missing sequence", []string{"--policy", policy, "--dsn", dsn, "--sequence", "claims_seq"}, []string{"no sequence claims_seq", "--counter NAME"}},
		{"missing jobs table", []string{"--policy", policy, "--dsn", dsn, "--jobs-table", "queue"}, []string{"no table queue"}},
		{"mistyped jobs table", []string{"--policy", policy, "--dsn", dsn, "--jobs-table", "job"}, []string{"no table job in the database (--jobs-table) (did you mean jobs?)"}},
		{"missing jobs column", []string{"--policy", policy, "--dsn", dsn, "--jobs-table", "jobs", "--epoch-column", "epoch"}, []string{"has no column epoch"}},
		{"missing counter table", []string{"--policy", policy, "--dsn", dsn, "--counter", "sqlfence_epoch_counter"}, []string{"no table sqlfence_epoch_counter in the database (--counter)"}},
		{"mistyped counter table", []string{"--policy", policy, "--dsn", dsn, "--counter", "empty_countr"}, []string{"(did you mean empty_counter?)"}},
		{"a counter table without a row", []string{"--policy", policy, "--dsn", dsn, "--counter", "empty_counter"}, []string{"has 0 rows, and a claim counter has one"}},
		{"a table that is no counter", []string{"--policy", policy, "--dsn", dsn, "--counter", "jobs"}, []string{"public.jobs has no column value"}},
		{"a policy table the database does not have", []string{"--policy", clitest.WriteFile(t, dir, "p.yaml", "version: 1\ntables:\n  - name: ledger\n"), "--dsn", dsn},
			[]string{"table ledger (policy line 3) does not exist"}},
		{"a mistyped policy table", []string{"--policy", clitest.WriteFile(t, dir, "typo.yaml", "version: 1\ntables:\n  - name: inventroy\n  - name: billing.invoice\n"), "--dsn", dsn},
			[]string{"table inventroy (policy line 3) does not exist in the database (did you mean inventory?)",
				"table billing.invoice (policy line 4) does not exist in the database (did you mean billing.invoices?)"}},
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

// Claims that move the counter past the rows between the scan and --fix leave it
// nothing to do: it reads the counter again under its lock and never lowers it.
func TestAuditFixAfterClaims(t *testing.T) {
	t.Parallel()
	f := auditFixture(t)
	later, _ := f.addEpochs(t)
	conn := clitest.PGConnect(t, f.dsn, nil)
	a := &auditor{conn: conn, progress: io.Discard, examples: 1, batchPages: 16384, lockTimeout: 10 * time.Second}
	ctx := deadline(t)
	c, err := a.sequenceCounter(ctx, "sqlfence_epoch", true, f.tl)
	if err != nil {
		t.Fatal(err)
	}
	rep := auditReport{Counter: c}
	rels, err := resolveTables(ctx, conn, mustPolicy(t, f.policy))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.scan(ctx, &rep, rels); err != nil || rep.RowsAbove != 2 {
		t.Fatalf("scan: %d rows above, %v", rep.RowsAbove, err)
	}
	past := later - epoch(f.tl, 0) + 5
	exec(t, f.raw, "SELECT setval('sqlfence_epoch', $1)", past) // claims drew up to there
	fix, err := a.fix(ctx, &rep)
	if err != nil {
		t.Fatal(err)
	}
	rep.Fix = fix
	if fix.Applied || fix.RowsLeft != 0 || fix.RawFrom != past || !strings.Contains(fix.Note, fmt.Sprintf("the sequence is already at %d", past)) || rep.rowsLeft() != 0 {
		t.Errorf("--fix after claims passed the rows: %+v", fix)
	}
	if v := queryInt(t, f.raw, "SELECT last_value FROM sqlfence_epoch"); v != past {
		t.Errorf("--fix moved the sequence to %d, want it left at %d", v, past)
	}
}

func mustPolicy(t *testing.T, path string) *sqlfence.Policy {
	t.Helper()
	pol, err := cmdutil.LoadPolicy(path)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}
