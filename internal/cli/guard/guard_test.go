package guard

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

const guardSchema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
CREATE SCHEMA billing;
CREATE TABLE billing.invoices (id int, total numeric NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
CREATE TABLE billing.invoices_2025 PARTITION OF billing.invoices FOR VALUES FROM (0) TO (1000);
CREATE TABLE notes (id int PRIMARY KEY, body text);
INSERT INTO inventory (sku, quantity, writer_epoch) VALUES ('widget', 10, 5), ('bolt', 4, 5);
INSERT INTO billing.invoices (id, total, writer_epoch) VALUES (1, 100, 5);
INSERT INTO notes VALUES (1, 'unprotected');
`

const guardPolicy = `version: 1
tables:
  - name: inventory
  - name: billing.invoices
    mode: repeatable
`

func TestMain(m *testing.M) { pgtest.Main(m) }

// cli runs sqlfence guard with args, as the program would.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return clitest.Run(t, Run, args...)
}

// guardFixture is a database with the guard's test tables, and the policy file.
func guardFixture(t *testing.T) (dsn, policy string, raw *pgx.Conn) {
	t.Helper()
	dsn = pgtest.NewDB(t)
	raw = clitest.PGConnect(t, dsn, nil)
	if _, err := raw.Exec(t.Context(), guardSchema); err != nil {
		t.Fatal(err)
	}
	policy = clitest.WriteFile(t, t.TempDir(), "sqlfence.yaml", guardPolicy)
	return dsn, policy, raw
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestGuard(t *testing.T) {
	t.Parallel()
	dsn, policy, raw := guardFixture(t)
	ctx := t.Context()
	out, errOut, code := cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "guard --apply", out, "sqlfence guard installed",
		"  inventory (writer_epoch):            public.inventory\n",
		"  billing.invoices (writer_epoch):     billing.invoices (partitioned table)\n",
		"                                       billing.invoices_2025 (partition or child table)\n")

	// Writes that did not come through the driver fail, with a clear message.
	for _, stmt := range []string{
		"UPDATE inventory SET quantity = 0 WHERE sku = 'widget'",
		"DELETE FROM inventory WHERE sku = 'bolt'",
		"INSERT INTO inventory (sku, quantity) VALUES ('nut', 1)",
		"TRUNCATE inventory",
		"UPDATE billing.invoices SET total = 0",
		"UPDATE billing.invoices_2025 SET total = 0", // a partition, written directly
	} {
		_, err := raw.Exec(ctx, stmt)
		if pgCode(err) != "SF001" {
			t.Errorf("%s: %v, want the guard's SF001", stmt, err)
			continue
		}
		var pe *pgconn.PgError
		errors.As(err, &pe)
		if !strings.Contains(pe.Message, "rejected: the session did not come through the sqlfence driver") ||
			!strings.Contains(pe.Hint, "sqlfence.override") {
			t.Errorf("%s: message %q hint %q", stmt, pe.Message, pe.Hint)
		}
	}
	// Unprotected tables are not guarded.
	if _, err := raw.Exec(ctx, "UPDATE notes SET body = 'still writable'"); err != nil {
		t.Errorf("unprotected table: %v", err)
	}

	// sqlfence writes work: the driver's connections say so in their startup message.
	db, err := sql.Open("sqlfence", cmdutil.WithParam(dsn, sqlfence.PolicyParam, policy))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ectx := sqlfence.WithEpoch(ctx, 6)
	if _, err := db.ExecContext(ectx, "UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1", "widget"); err != nil {
		t.Fatalf("sqlfence UPDATE under the guard: %v", err)
	}
	if _, err := db.ExecContext(ectx, "DELETE FROM inventory WHERE sku = $1", "bolt"); err != nil {
		t.Fatalf("sqlfence DELETE under the guard: %v", err)
	}
	if _, err := db.ExecContext(ectx, "INSERT INTO inventory (sku, quantity) VALUES ($1, 1)", "nut"); err != nil {
		t.Fatalf("sqlfence INSERT under the guard: %v", err)
	}
	var qty, epoch int64
	if err := raw.QueryRow(ctx, "SELECT quantity, writer_epoch FROM inventory WHERE sku = 'widget'").Scan(&qty, &epoch); err != nil || qty != 9 || epoch != 6 {
		t.Errorf("after the fenced write: quantity %d epoch %d (%v), want 9 and 6", qty, epoch, err)
	}

	// No UPDATE may move an epoch backwards, not even one that carries the driver's
	// markers (forged here: the session setting and the comment).
	fenced := clitest.PGConnect(t, dsn, map[string]string{sqlfence.GuardSetting: "on"})
	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ UPDATE inventory SET writer_epoch = 1 WHERE sku = 'widget'"); pgCode(err) != "SF002" ||
		!strings.Contains(err.Error(), "would move writer_epoch backwards, from 6 to 1") {
		t.Errorf("epoch moved backwards: %v", err)
	}
	if _, err := fenced.Exec(ctx, "/*sqlfence fenced: inventory*/ UPDATE inventory SET writer_epoch = 7 WHERE sku = 'widget'"); err != nil {
		t.Errorf("epoch moved forwards: %v", err)
	}

	// The operator override: needs a reason, lasts one transaction, and is logged.
	if _, err := raw.Exec(ctx, "SELECT sqlfence.override('fix')"); pgCode(err) != "SF003" {
		t.Errorf("override without a real reason: %v", err)
	}
	tx, err := raw.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT sqlfence.override('recount after INC-1234')"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "UPDATE inventory SET quantity = 12 WHERE sku = 'widget'"); err != nil {
		t.Fatalf("UPDATE under the override: %v", err)
	}
	if _, err := tx.Exec(ctx, "UPDATE inventory SET writer_epoch = 0 WHERE sku = 'nut'"); err != nil {
		t.Fatalf("lowering an epoch under the override: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	var reason, op, rel, user string
	if err := raw.QueryRow(ctx, "SELECT count(*) OVER (), reason, operation, relation, username FROM sqlfence.override_log ORDER BY id LIMIT 1").
		Scan(&n, &reason, &op, &rel, &user); err != nil {
		t.Fatal(err)
	}
	if n != 2 || reason != "recount after INC-1234" || op != "UPDATE" || rel != "public.inventory" || user != "postgres" {
		t.Errorf("override log: %d rows, first %q %q %q %q", n, reason, op, rel, user)
	}
	// The override ended with its transaction, and a session-level setting is not one.
	if _, err := raw.Exec(ctx, "UPDATE inventory SET quantity = 13 WHERE sku = 'widget'"); pgCode(err) != "SF001" {
		t.Errorf("after the override's transaction: %v", err)
	}
	if _, err := raw.Exec(ctx, "SET sqlfence.override = 'a session-level reason'"); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(ctx, "UPDATE inventory SET quantity = 13 WHERE sku = 'widget'"); pgCode(err) != "SF001" ||
		!strings.Contains(err.(*pgconn.PgError).Detail, "not by sqlfence.override() in this transaction") {
		t.Errorf("session-level override: %v", err)
	}
	raw.Exec(ctx, "RESET sqlfence.override")

	// Applying it again is harmless.
	out, errOut, code = cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)

	// --drop removes everything, and says what it removed.
	out, errOut, code = cli(t, "--drop", "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "guard --drop", out, "sqlfence guard removed from", "public.inventory", "billing.invoices_2025",
		"dropped sqlfence.override_log (2 rows)")
	if _, err := raw.Exec(ctx, "UPDATE inventory SET quantity = 0 WHERE sku = 'widget'"); err != nil {
		t.Errorf("after --drop: %v", err)
	}
	var left int
	raw.QueryRow(ctx, "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'sqlfence%'").Scan(&left)
	var schema bool
	raw.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'sqlfence')").Scan(&schema)
	if left != 0 || schema {
		t.Errorf("after --drop: %d triggers, schema sqlfence exists: %v", left, schema)
	}
}

// The printed SQL is what --apply runs: applying it with a plain client installs the
// same guard, and --no-insert leaves INSERT alone.
func TestGuardPrintedSQL(t *testing.T) {
	t.Parallel()
	_, policy, raw := guardFixture(t)
	ctx := t.Context()
	out, errOut, code := cli(t, "--policy", policy, "--no-insert")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "guard SQL", out, "BEGIN;", "COMMIT;", "CREATE OR REPLACE FUNCTION sqlfence.guard()",
		"SELECT * FROM sqlfence.install_guard(NULL, 'inventory', 'writer_epoch', false);",
		"SELECT * FROM sqlfence.install_guard('billing', 'invoices', 'writer_epoch', false);")
	if _, err := raw.Exec(ctx, out); err != nil {
		t.Fatalf("applying the printed SQL: %v", err)
	}
	if _, err := raw.Exec(ctx, "INSERT INTO inventory (sku, quantity) VALUES ('nut', 1)"); err != nil {
		t.Errorf("INSERT with --no-insert: %v", err)
	}
	if _, err := raw.Exec(ctx, "UPDATE inventory SET quantity = 0"); pgCode(err) != "SF001" {
		t.Errorf("UPDATE: %v", err)
	}
	out, errOut, code = cli(t, "--drop", "--keep-log")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	if strings.Contains(out, "DROP TABLE IF EXISTS sqlfence.override_log") {
		t.Errorf("--keep-log drops the log:\n%s", out)
	}
	if _, err := raw.Exec(ctx, out); err != nil {
		t.Fatalf("applying the printed --drop SQL: %v", err)
	}
	var logKept bool
	raw.QueryRow(ctx, "SELECT to_regclass('sqlfence.override_log') IS NOT NULL").Scan(&logKept)
	if _, err := raw.Exec(ctx, "UPDATE inventory SET quantity = 0"); err != nil || !logKept {
		t.Errorf("after --drop --keep-log: %v, log kept %v", err, logKept)
	}
}

func TestGuardBadInput(t *testing.T) {
	t.Parallel()
	dsn, policy, raw := guardFixture(t)
	dir := t.TempDir()
	missingTable := clitest.WriteFile(t, dir, "missing.yaml", "version: 1\ntables:\n  - name: inventory\n  - name: ledger\n")
	missingColumn := clitest.WriteFile(t, dir, "column.yaml", "version: 1\ntables:\n  - name: inventory\n    epoch_column: fence_epoch\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing policy", []string{"--policy", filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml does not exist"}},
		{"no policy", nil, []string{"no policy: give --policy PATH"}},
		{"--apply without --dsn", []string{"--policy", policy, "--apply"}, []string{"--apply needs --dsn"}},
		{"--dsn without --apply", []string{"--policy", policy, "--dsn", dsn}, []string{"--dsn is used only with --apply"}},
		{"a DSN that does not answer", []string{"--policy", policy, "--apply", "--dsn", clitest.SilentServer(t), "--connect-timeout", "1s"},
			[]string{"cannot connect to database \"app\" as \"app\" at 127.0.0.1:", "within 1s"}},
		{"a table the database does not have", []string{"--policy", missingTable, "--apply", "--dsn", dsn},
			[]string{"sqlfence guard: the protected table ledger does not exist in database", "(policy line 4) [SF004]: Create the table first"}},
		{"a broken policy", []string{"--policy", clitest.WriteFile(t, dir, "broken.yaml", "version: 1\ntables:\n  - nme: inventory\n")},
			[]string{"sqlfence guard: policy ", "broken.yaml line 3: unknown key"}},
		{"a table without the epoch column", []string{"--policy", missingColumn, "--apply", "--dsn", dsn},
			[]string{"public.inventory has no epoch column fence_epoch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := cli(t, tc.args...)
			clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
			clitest.WantContains(t, "stderr", errOut, tc.want...)
			// One prefix: the command's own.
			if strings.Count(errOut, "sqlfence guard:")+strings.Count(errOut, "sqlfence:") != 1 {
				t.Errorf("stderr doubles its prefix: %q", errOut)
			}
		})
	}
	// A failed --apply leaves nothing behind: it is one transaction.
	var n int
	raw.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = 'sqlfence'").Scan(&n)
	if n != 0 {
		t.Errorf("a failed --apply left the sqlfence schema behind")
	}
}
