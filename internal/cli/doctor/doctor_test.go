package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/cli/guard"
	"github.com/sqlfence/sqlfence/internal/pgcluster"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const schema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_2025 PARTITION OF billing.invoices FOR VALUES FROM (0) TO (1000);
CREATE TABLE jobs (id bigint PRIMARY KEY, status text NOT NULL DEFAULT 'pending', lease_epoch bigint NOT NULL DEFAULT 0);
CREATE TABLE notes (id int PRIMARY KEY, body text, writer_epoch bigint NOT NULL DEFAULT 0);
`

const policyText = `version: 1
tables:
  - name: inventory
  - name: billing.invoices
claims:
  - table: jobs
`

var roles atomic.Int64

// fixture is a database with the schema, an application role that may write its
// tables and nothing else, and the policy file.
type fixture struct {
	admin, app string // DSNs: a superuser's, the application role's
	role       string
	raw        *pgx.Conn // the superuser's
	policy     string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{admin: pgtest.NewDB(t)}
	f.raw = clitest.PGConnect(t, f.admin, nil)
	f.role = fmt.Sprintf("doctor_app_%d_%d", time.Now().UnixNano()%1e9, roles.Add(1))
	f.exec(t, schema+`CREATE ROLE `+f.role+` LOGIN;
		GRANT USAGE ON SCHEMA billing TO `+f.role+`;
		GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public, billing TO `+f.role)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.raw.Exec(ctx, "DROP OWNED BY "+f.role+"; DROP ROLE "+f.role)
	})
	u, err := url.Parse(f.admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(f.role)
	f.app = u.String()
	f.policy = clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", policyText)
	return f
}

func (f *fixture) exec(t *testing.T, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := f.raw.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// installGuard installs the guard as the superuser, with the policy at path.
func (f *fixture) installGuard(t *testing.T, path string, extra ...string) {
	t.Helper()
	out, errOut, code := clitest.Run(t, guard.Run, append([]string{"--policy", path, "--apply", "--dsn", f.admin}, extra...)...)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	// Triggers that fire in every replication role. The guard installs them so
	// (ENABLE ALWAYS); running it here again keeps this fixture passing on a guard
	// that does not, and is a no-op on one that does.
	f.exec(t, `DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT t.tgrelid::regclass AS rel, t.tgname FROM pg_trigger t WHERE t.tgname IN ('sqlfence_guard', 'sqlfence_guard_epoch') AND t.tgparentid = 0 LOOP
			EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', r.rel, r.tgname);
		END LOOP;
		FOR r IN SELECT evtname FROM pg_event_trigger WHERE evtname LIKE 'sqlfence\_%' LOOP
			EXECUTE format('ALTER EVENT TRIGGER %I ENABLE ALWAYS', r.evtname);
		END LOOP; END $$`)
}

// healthy is the deployment doctor passes: the guard installed, the role's
// timeouts below the lease.
func (f *fixture) healthy(t *testing.T) {
	t.Helper()
	f.installGuard(t, f.policy)
	f.exec(t, "ALTER ROLE "+f.role+" SET statement_timeout = '10s'; ALTER ROLE "+f.role+" SET lock_timeout = '5s'")
}

func runDoctor(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

// report runs doctor with --json and returns its report and exit code.
func report(t *testing.T, args ...string) (Report, int, string) {
	t.Helper()
	out, errOut, code := runDoctor(t, append(args, "--json")...)
	if code == cmdutil.ExitError {
		t.Fatalf("doctor exited %d:\n%s%s", code, out, errOut)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	return r, code, out
}

// want reports whether r has a check named check with status and every one of subs
// in its detail or fix.
func want(t *testing.T, r Report, check string, status Status, subs ...string) {
	t.Helper()
	for _, c := range r.Checks {
		if c.Check != check || c.Status != status {
			continue
		}
		text := c.Detail + "\nfix: " + c.Fix + "\ncode: " + c.Code
		ok := true
		for _, s := range subs {
			if !strings.Contains(text, s) {
				ok = false
			}
		}
		if ok {
			return
		}
	}
	js, _ := json.MarshalIndent(r.Checks, "", "  ")
	t.Errorf("no %s check with status %s containing %q:\n%s", check, status, subs, js)
}

func TestDoctorPassesAll(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	out, errOut, code := runDoctor(t, "--dsn", f.app, "--policy", f.policy)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "  pass") {
			t.Errorf("a check did not pass: %q\n%s", line, out)
		}
	}
	clitest.WantContains(t, "doctor", out, "sqlfence doctor: database", "  pass  server ", "  pass  replication ", "  pass  pooler ",
		"  pass  role ", "  pass  policy ", "  pass  guard       inventory: 1 relation guarded", "billing.invoices: 2 relations guarded",
		"  pass  catalog ", "  pass  timeouts    lock_timeout is 5s", " failed\n")
	r, code, _ := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != cmdutil.ExitOK || r.Summary.Fail+r.Summary.Warn+r.Summary.Skip != 0 || r.Summary.Pass < 9 {
		t.Errorf("--json: exit %d, summary %+v", code, r.Summary)
	}
	// The application's DSN as it is, naming its policy: the policy is read from it
	// and the parameter is not sent to the server.
	u, err := url.Parse(f.app)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sqlfence_policy", f.policy)
	u.RawQuery = q.Encode()
	r, code, _ = report(t, "--dsn", u.String())
	if code != cmdutil.ExitOK || r.Policy != f.policy {
		t.Errorf("the DSN's sqlfence_policy: exit %d, policy %q", code, r.Policy)
	}
	q.Set("sqlfence_polcy", f.policy)
	u.RawQuery = q.Encode()
	if _, errOut, code := runDoctor(t, "--dsn", u.String(), "--policy", f.policy); code != cmdutil.ExitError ||
		!strings.Contains(errOut, `sqlfence doctor: bad --dsn: unknown DSN parameter "sqlfence_polcy" (did you mean sqlfence_policy?)`) {
		t.Errorf("a misspelt DSN parameter: exit %d, %q", code, errOut)
	}
}

func TestDoctorUsage(t *testing.T) {
	t.Parallel()
	_, errOut, code := runDoctor(t, "--policy", "x.yaml")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "--dsn is required") {
		t.Errorf("without --dsn: exit %d, %q", code, errOut)
	}
	_, errOut, code = runDoctor(t, "--dsn", clitest.SilentServer(t), "--policy", clitest.WriteFile(t, t.TempDir(), "p.yaml", policyText), "--connect-timeout", "500ms")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "sqlfence doctor: cannot connect") {
		t.Errorf("a server that does not answer: exit %d, %q", code, errOut)
	}
}

// TestDoctorNoGuard: no guard, no catalog version: both fail with the command that
// installs them; with catalog_refresh the catalog's failure is a warning.
func TestDoctorNoGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, code, out := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d, want %d:\n%s", code, cmdutil.ExitFindings, out)
	}
	want(t, r, "guard", Fail, "the guard is not installed", "sqlfence guard --policy "+f.policy+" --apply")
	want(t, r, "catalog", Fail, "no catalog version", "refuses every fenced write", "SF524", "catalog_refresh: 1s")
	refresh := clitest.WriteFile(t, t.TempDir(), "refresh.yaml", policyText+"catalog_refresh: 2s\n")
	r, _, _ = report(t, "--dsn", f.app, "--policy", refresh)
	want(t, r, "catalog", Warn, "with catalog_refresh 2s", "SF524")
}

// TestDoctorGuardOriginOnly: triggers that a session with session_replication_role
// = replica skips fail, with the fix to re-run the guard.
func TestDoctorGuardOriginOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	f.exec(t, "ALTER TABLE inventory ENABLE TRIGGER sqlfence_guard; ALTER TABLE billing.invoices_2025 ENABLE REPLICA TRIGGER sqlfence_guard_epoch; ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE")
	r, code, _ := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "guard", Fail, "public.inventory (policy: inventory): its sqlfence_guard trigger is origin-only", "re-run sqlfence guard --policy")
	want(t, r, "guard", Fail, "billing.invoices_2025 (policy: billing.invoices): its sqlfence_guard_epoch trigger is replica-only")
	want(t, r, "catalog", Fail, "sqlfence_catalog_ddl is origin-only", "re-run sqlfence guard")
}

// TestDoctorGuardNotCurrent: a partition without the guard, a trigger disabled, the
// guard installed for another epoch column or without INSERT, a table guarded that
// the policy no longer names.
func TestDoctorGuardNotCurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.exec(t, "ALTER TABLE inventory ADD COLUMN other_epoch bigint NOT NULL DEFAULT 0")
	old := clitest.WriteFile(t, t.TempDir(), "old.yaml", `version: 1
tables:
  - name: inventory
    epoch_column: other_epoch
  - name: billing.invoices
  - name: notes
`)
	f.installGuard(t, old, "--no-insert")
	// A partition made while the event triggers were off is not guarded.
	f.exec(t, `ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE;
		CREATE TABLE billing.invoices_2026 PARTITION OF billing.invoices FOR VALUES FROM (1000) TO (2000);
		ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE ALWAYS;
		ALTER TABLE billing.invoices_2025 DISABLE TRIGGER sqlfence_guard`)
	r, code, _ := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "guard", Fail, "public.inventory (policy: inventory): its sqlfence_guard_epoch trigger guards the column other_epoch, but the policy's epoch column is writer_epoch")
	want(t, r, "guard", Fail, "billing.invoices_2026 (policy: billing.invoices): has no sqlfence_guard trigger")
	want(t, r, "guard", Fail, "billing.invoices_2025 (policy: billing.invoices): its sqlfence_guard trigger is disabled")
	want(t, r, "guard", Warn, "inventory: INSERT (and COPY FROM) is not guarded", "without --no-insert")
	want(t, r, "guard", Warn, "the guard also covers public.notes, which the policy does not protect", "sqlfence guard --drop")
}

// TestDoctorPolicy: a table the database lacks and a nullable epoch column fail with
// the driver's codes; a cascading foreign key warns.
func TestDoctorPolicy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	f.exec(t, `ALTER TABLE billing.invoices ALTER COLUMN writer_epoch DROP NOT NULL;
		CREATE TABLE shelves (id int PRIMARY KEY);
		ALTER TABLE inventory ADD COLUMN shelf int REFERENCES shelves ON DELETE CASCADE`)
	p := clitest.WriteFile(t, t.TempDir(), "p.yaml", strings.Replace(policyText, "claims:", "  - name: inventroy\nclaims:", 1))
	r, code, _ := report(t, "--dsn", f.app, "--policy", p)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "policy", Fail, "SF520", "inventroy", "did you mean inventory", "fix the name in the policy")
	want(t, r, "policy", Fail, "SF521", "billing.invoices", "ALTER TABLE")
	// What the catalog holds is judged once the policy matches the database.
	f.exec(t, "ALTER TABLE billing.invoices ALTER COLUMN writer_epoch SET NOT NULL")
	r, code, _ = report(t, "--dsn", f.app, "--policy", f.policy)
	if code != ExitWarnings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "policy", Warn, "SF501", "shelves")
	want(t, r, "policy", Pass, "2 protected tables and 1 claim table exist")
}

// TestDoctorRole: a superuser, an owner of a protected table, and a role that may
// change the guard's schema.
func TestDoctorRole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	r, _, _ := report(t, "--dsn", f.admin, "--policy", f.policy)
	want(t, r, "role", Fail, "is a superuser", "can disable the guard's triggers", "NOSUPERUSER")

	f.exec(t, "ALTER TABLE inventory OWNER TO "+f.role+"; GRANT CREATE ON SCHEMA sqlfence TO "+f.role+"; GRANT UPDATE ON SEQUENCE sqlfence.catalog_version TO "+f.role)
	r, code, _ := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "role", Fail, "can create or replace objects in the schema sqlfence", "setval the catalog version", "REVOKE ALL ON SCHEMA sqlfence")
	want(t, r, "role", Warn, "owns the protected table public.inventory", "ALTER TABLE public.inventory OWNER TO migrator")
}

// TestDoctorTimeouts: no timeouts, and one above the lease, warn; the exit code
// says warnings, and --allow-warnings makes it 0.
func TestDoctorTimeouts(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.installGuard(t, f.policy)
	f.exec(t, "ALTER ROLE "+f.role+" SET lock_timeout = '1min'")
	r, code, _ := report(t, "--dsn", f.app, "--policy", f.policy)
	if code != ExitWarnings {
		t.Errorf("exit %d, want %d", code, ExitWarnings)
	}
	want(t, r, "timeouts", Warn, "statement_timeout is 0 (none)", "ALTER ROLE "+f.role+" SET statement_timeout = '10s'")
	want(t, r, "timeouts", Warn, "lock_timeout is 1m0s, not below the lease 30s")
	r, _, _ = report(t, "--dsn", f.app, "--policy", f.policy, "--lease", "2m")
	want(t, r, "timeouts", Pass, "lock_timeout is 1m0s, below the lease 2m0s")
	_, _, code = runDoctor(t, "--dsn", f.app, "--policy", f.policy, "--allow-warnings")
	if code != cmdutil.ExitOK {
		t.Errorf("--allow-warnings: exit %d", code)
	}
}

// TestDoctorBehindPooler: through a proxy (as PgBouncer is), with the guard
// installed, the role must carry sqlfence.fenced itself; the DSN should not keep
// pgx's statement cache.
func TestDoctorBehindPooler(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	u, err := url.Parse(f.app)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy(t, u.Host)
	r, code, _ := report(t, "--dsn", u.String(), "--policy", f.policy)
	if code != cmdutil.ExitFindings {
		t.Errorf("exit %d", code)
	}
	want(t, r, "pooler", Pass, "a pooler or proxy answers on port")
	want(t, r, "pooler", Fail, "SF001", "ALTER ROLE "+f.role+" IN DATABASE", "SET sqlfence.fenced = on", "ignore_startup_parameters")
	want(t, r, "pooler", Warn, "default_query_exec_mode=exec")

	var db string
	f.raw.QueryRow(t.Context(), "SELECT current_database()").Scan(&db)
	f.exec(t, "ALTER ROLE "+f.role+" IN DATABASE "+db+" SET sqlfence.fenced = on")
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	r, code, out := report(t, "--dsn", u.String(), "--policy", f.policy)
	if code != cmdutil.ExitOK {
		t.Errorf("with the role's setting and exec mode: exit %d\n%s", code, out)
	}
	want(t, r, "pooler", Pass, "a pooler or proxy answers on port")
}

// proxy forwards TCP connections to target, as a pooler in front of the server
// would, and returns its address.
func proxy(t *testing.T, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer wg.Done(); io.Copy(c, s); c.Close() }()
		}
	}()
	return l.Addr().String()
}

// TestDoctorReplication: on a replica set, the primary with an asynchronous standby
// warns, the standby fails, and the primary passes once its commits wait for the
// standby; a synchronous standby named but not attached warns.
func TestDoctorReplication(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	rs, err := pgcluster.StartReplicaSet(ctx, pgcluster.ReplicaOptions{Standbys: 1})
	if errors.Is(err, pgcluster.ErrNoServer) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	primary, standby := rs.Nodes()[0], rs.Nodes()[1]
	p := clitest.WriteFile(t, t.TempDir(), "p.yaml", "version: 1\ntables: [inventory]\n")
	admin, err := primary.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE TABLE inventory (sku text PRIMARY KEY, writer_epoch bigint NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	r, _, _ := report(t, "--dsn", primary.DSN("postgres"), "--policy", p)
	want(t, r, "replication", Warn, "1 standby replicate asynchronously", "a failover can lose the last commits", "synchronous_standby_names")
	r, _, _ = report(t, "--dsn", standby.DSN("postgres"), "--policy", p)
	want(t, r, "replication", Fail, "the DSN reaches a standby", "target_session_attrs=read-write")

	setSync := func(names string) {
		t.Helper()
		if _, err := admin.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+names+"'"); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
			t.Fatal(err)
		}
	}
	setSync("FIRST 1 (" + standby.Name() + ")")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, _, _ = report(t, "--dsn", primary.DSN("postgres"), "--policy", p)
		if c := find(r, "replication"); c.Status == Pass || time.Now().After(deadline) {
			break
		}
	}
	want(t, r, "replication", Pass, "commits wait for 1 synchronous standby")
	setSync("FIRST 1 (nosuchnode)")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, _, _ = report(t, "--dsn", primary.DSN("postgres"), "--policy", p)
		if c := find(r, "replication"); c.Status == Warn || time.Now().After(deadline) {
			break
		}
	}
	want(t, r, "replication", Warn, "none is attached as synchronous", "SF611")
	setSync("")
}

func find(r Report, check string) Check {
	for _, c := range r.Checks {
		if c.Check == check {
			return c
		}
	}
	return Check{}
}

var update = flag.Bool("update", false, "rewrite testdata/readme.txt")

// TestDoctorReadme keeps the README's sample run in testdata/readme.txt: a deployment
// with one partition's guard trigger origin-only and no statement_timeout. What
// changes from run to run (the database, the role, the port, the server's build, the
// catalog version) is written as the README's reader would see it for theirs.
func TestDoctorReadme(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.healthy(t)
	f.exec(t, "ALTER TABLE billing.invoices_2025 ENABLE TRIGGER sqlfence_guard; ALTER ROLE "+f.role+" RESET statement_timeout")
	out, errOut, code := runDoctor(t, "--dsn", f.app, "--policy", f.policy)
	clitest.WantCode(t, code, cmdutil.ExitFindings, out, errOut)
	cfg, err := pgx.ParseConfig(f.app)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ re, with string }{
		{regexp.QuoteMeta(f.policy), "sqlfence.yaml"},
		{regexp.QuoteMeta(f.role), "app"},
		{`database "[^"]+"`, `database "shop"`},
		{regexp.QuoteMeta(fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)), "db.internal:5432"},
		{fmt.Sprintf(`port %d\b`, cfg.Port), "port 5432"},
		{`PostgreSQL [0-9.]+( \([^)]*\))?? \(supported`, "PostgreSQL 16.4 (supported"}, // 15.18 (Debian 15.18-0+deb12u1), 17.10
		{`catalog version \d+`, "catalog version 12"},
	} {
		out = regexp.MustCompile(r.re).ReplaceAllString(out, r.with)
	}
	out = "$ sqlfence doctor --dsn postgres://app@db.internal:5432/shop --policy sqlfence.yaml\n" + out
	const golden = "testdata/readme.txt"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != out {
		t.Errorf("doctor's output changed (go test ./internal/cli/doctor -run TestDoctorReadme -update):\n%s", out)
	}
}
