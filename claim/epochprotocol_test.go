package claim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// TestEpochCountersThroughSqlfence: the epoch sequence and the counter table are part
// of the claim protocol. Through the driver, with and without an epoch and under
// ddl: allow, nothing moves them back, renames, drops or replaces them — judged on the
// sequence's and the counter's values afterwards — while nextval and the claim
// helpers' own draws still work.
func TestEpochCountersThroughSqlfence(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	global := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	counter := newLedger(t, claim.LedgerConfig{Epochs: claim.CounterEpoch, RenewEvery: -1})
	e := newEnv(t, global.Schema(), counter.Schema(), `SELECT setval('sqlfence_epoch', 41)`, `UPDATE sqlfence_epoch_counter SET value = 41`)
	ddl := e.fencedWith(t, testPolicy+"ddl: allow\n")
	attacks := []string{
		`SELECT setval('sqlfence_epoch', 1)`,
		`SELECT setval('public.sqlfence_epoch'::regclass, 1, false)`,
		`SELECT pg_catalog.setval('"sqlfence_epoch"', 1)`,
		`SELECT setval(c.oid::regclass, 1) FROM pg_class c WHERE c.relname = 'sqlfence_epoch'`,
		`SELECT 1 WHERE setval('sqlfence_epoch', 1) > 0`,
		`DO $$ BEGIN PERFORM setval('sqlfence_epoch', 1); END $$`,
		`UPDATE sqlfence_epoch_counter SET value = 1`,
		`UPDATE sqlfence_epoch_counter SET value = value + 1000`,
		`DELETE FROM sqlfence_epoch_counter`,
		`TRUNCATE sqlfence_epoch_counter`,
		`WITH c AS (UPDATE sqlfence_epoch_counter SET value = 0 RETURNING value) SELECT * FROM c`,
		`ALTER SEQUENCE sqlfence_epoch RESTART WITH 1`,
		`ALTER SEQUENCE sqlfence_epoch RENAME TO sqlfence_old`,
		`DROP SEQUENCE sqlfence_epoch`,
		`ALTER TABLE sqlfence_epoch_counter DISABLE TRIGGER ALL`,
		`ALTER TABLE sqlfence_epoch_counter RENAME TO counter_old`,
		`CREATE TEMP SEQUENCE sqlfence_epoch START 1`,
	}
	for _, db := range []struct {
		name string
		run  func(context.Context, string) error
	}{
		{"default policy", func(ctx context.Context, q string) error { _, err := e.fenced.ExecContext(ctx, q); return err }},
		{"ddl: allow", func(ctx context.Context, q string) error { _, err := ddl.ExecContext(ctx, q); return err }},
	} {
		for _, ctx := range []context.Context{ctx, sqlfence.WithEpoch(ctx, 3), sqlfence.WithEpoch(ctx, 99)} {
			for _, q := range attacks {
				if err := db.run(ctx, q); !errors.Is(err, sqlfence.ErrRefused) {
					t.Errorf("%s: %s: %v, want it refused", db.name, q, err)
				}
			}
		}
	}
	if got := e.query(t, `SELECT last_value FROM public.sqlfence_epoch`); got != "41" {
		t.Errorf("the epoch sequence is at %s after the refused statements, want 41", got)
	}
	if got := e.query(t, `SELECT value FROM public.sqlfence_epoch_counter`); got != "41" {
		t.Errorf("the epoch counter is at %s after the refused statements, want 41", got)
	}
	if got := e.query(t, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'public.sqlfence_epoch_counter'::regclass AND tgenabled = 'O'`); got != "2" {
		t.Errorf("%s enabled triggers on the counter, want 2", got)
	}
	// nextval only raises the sequence; the helpers still draw from both.
	if _, err := e.fenced.ExecContext(ctx, `SELECT nextval('sqlfence_epoch')`); err != nil {
		t.Fatalf("nextval through sqlfence: %v", err)
	}
	if _, err := e.fenced.ExecContext(ctx, `INSERT INTO jobs DEFAULT VALUES`); err != nil {
		t.Fatal(err)
	}
	db := mark(t, e.fenced)
	l, err := global.ClaimNext(ctx, db)
	if err != nil {
		t.Fatalf("a GlobalEpoch claim through sqlfence: %v", err)
	}
	defer l.Stop()
	m, err := counter.Claim(ctx, db, "m-1")
	if err != nil {
		t.Fatalf("a CounterEpoch claim through sqlfence: %v", err)
	}
	defer m.Stop()
	if floor := int64(1) << 32; l.Epoch != floor+43 || m.Epoch != floor+42 {
		t.Errorf("epochs %d (sequence) and %d (counter), want 1<<32 + 43 and 1<<32 + 42 (timeline 1)", l.Epoch, m.Epoch)
	}
}
