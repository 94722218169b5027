package guard

import (
	"bytes"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// TestGuardAlways: every trigger the guard installs fires in every replication role
// (ENABLE ALWAYS) — the statement and row triggers on tables, partitions and their
// parents, those its event trigger adds to a partition and an inheritance child
// created later (in a replica-mode session too), and both event triggers — and
// --apply warns about any that is not, naming it.
func TestGuardAlways(t *testing.T) {
	t.Parallel()
	dsn, policy, raw := guardFixture(t)
	out, errOut, code := cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	ctx := t.Context()
	if _, err := raw.Exec(ctx, `CREATE TABLE billing.invoices_2026 PARTITION OF billing.invoices FOR VALUES FROM (1000) TO (2000);
		SET session_replication_role = replica;
		CREATE TABLE inventory_old () INHERITS (inventory);
		RESET session_replication_role`); err != nil {
		t.Fatal(err)
	}
	var all, notAlways, events int
	if err := raw.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE tgenabled <> 'A') FROM pg_trigger WHERE tgname IN ('sqlfence_guard', 'sqlfence_guard_epoch')`).Scan(&all, &notAlways); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRow(ctx, `SELECT count(*) FROM pg_event_trigger WHERE evtname IN ('sqlfence_catalog_ddl', 'sqlfence_catalog_drop') AND evtenabled = 'A'`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if all < 8 || notAlways != 0 || events != 2 {
		t.Errorf("%d guard triggers, %d not enabled always; %d event triggers enabled always, want 2", all, notAlways, events)
	}
	var child int
	if err := raw.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid IN ('inventory_old'::regclass, 'billing.invoices_2026'::regclass) AND tgname = 'sqlfence_guard' AND tgenabled = 'A'`).Scan(&child); err != nil || child != 2 {
		t.Errorf("%d statement triggers enabled always on the new partition and child (%v), want 2", child, err)
	}
	if _, err := raw.Exec(ctx, `ALTER TABLE inventory ENABLE TRIGGER sqlfence_guard; ALTER EVENT TRIGGER sqlfence_catalog_drop DISABLE`); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	guardScript{}.reportAlways(ctx, raw, &b)
	clitest.WantContains(t, "reportAlways", b.String(), "warning [SF524]: 2 of the guard's triggers do not fire in every replication role",
		"event trigger sqlfence_catalog_drop (disabled)", "trigger sqlfence_guard on inventory (origin sessions only)")
	// --apply enables them again.
	out, errOut, code = cli(t, "--policy", policy, "--apply", "--dsn", dsn)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	b.Reset()
	guardScript{}.reportAlways(ctx, raw, &b)
	if b.Len() != 0 {
		t.Errorf("after --apply again: %s", b.String())
	}
}
