package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// TestEffectKeys: a key is the same for every execution of a job and differs
// per step, job, table and namespace; a bad step name is an error.
func TestEffectKeys(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const lease = 200 * time.Millisecond
	j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: -1})
	other := newJobs(t, claim.JobsConfig{Table: "other_jobs", Lease: lease, RenewEvery: -1})
	lg := newLedger(t, claim.LedgerConfig{Lease: lease, RenewEvery: -1})
	e := newEnv(t, j.Schema(), other.Schema(), lg.Schema(),
		`INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES; INSERT INTO other_jobs DEFAULT VALUES`)
	key := func(l *claim.Lease, step string) string {
		t.Helper()
		k, err := l.Key(step)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	first := key(a, "charge")
	if !regexp.MustCompile(`^sf1_[A-Za-z0-9_-]{43}$`).MatchString(first) || len(first) != claim.KeyLen {
		t.Fatalf("key %q does not have the documented format", first)
	}
	time.Sleep(lease + 50*time.Millisecond)
	b, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if b.Epoch <= a.Epoch || key(b, "charge") != first {
		t.Fatalf("the successor (epoch %d after %d) has key %s for the same step, want %s", b.Epoch, a.Epoch, key(b, "charge"), first)
	}
	two, err := j.Claim(ctx, e.db, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer two.Stop()
	o, err := other.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Stop()
	m, err := lg.Claim(ctx, e.db, "1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	seen := map[string]string{first: "jobs/1/charge"}
	for what, k := range map[string]string{
		"jobs/1/email":             key(b, "email"),
		"jobs/2/charge":            key(two, "charge"),
		"other_jobs/1/charge":      key(o, "charge"),
		"sqlfence_claims/1/charge": key(m, "charge"),
	} {
		if prev, dup := seen[k]; dup {
			t.Errorf("%s and %s share the key %s", what, prev, k)
		}
		seen[k] = what
	}
	for _, c := range []struct{ step, want string }{
		{"", "empty"},
		{strings.Repeat("x", claim.MaxStepBytes+1), "over the limit"},
		{"a\xffb", "not valid UTF-8"},
		{"a\x00b", "NUL byte"},
	} {
		k, err := b.Key(c.step)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "table jobs") || k != "" {
			t.Errorf("Key(%q) = %q, %v; want an error naming the job's table and saying %q", c.step, k, err, c.want)
		}
	}
	if _, err := b.Key(strings.Repeat("é", claim.MaxStepBytes/2)); err != nil {
		t.Errorf("a step of exactly %d bytes: %v", claim.MaxStepBytes, err)
	}
}

// TestKeyNamespace: the same job and step under two namespaces are two effects.
func TestKeyNamespace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	spaced := newJobs(t, claim.JobsConfig{KeyNamespace: "staging", RenewEvery: -1})
	e := newEnv(t, plain.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	a, err := plain.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	ka, _ := a.Key("charge")
	if err := a.Release(ctx, 0); err != nil {
		t.Fatal(err)
	}
	b, err := spaced.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	if kb, _ := b.Key("charge"); kb == ka {
		t.Fatalf("namespaces staging and \"\" give job 1 the same key %s", ka)
	}
}

// TestSteps: a step committed by a superseded execution is skipped by its
// successor; a step rolled back runs again; a superseded execution can
// record nothing, not even a step that is done. Through sqlfence and through
// the plain driver alike: the check is in the helper's own statements.
func TestSteps(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"sqlfence", "plain"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			const lease = 300 * time.Millisecond
			j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: -1})
			steps, err := claim.NewSteps("")
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, j.Schema(), steps.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
			db := e.fenced
			if via == "plain" {
				db = e.raw
			}
			// One row per step: the policy's strict mode allows one write per
			// row per epoch.
			write := func(tx *sql.Tx, l *claim.Lease, n int) error {
				sku := map[int]string{1: "a", 10: "b"}[n]
				_, err := tx.ExecContext(l.Context(), `UPDATE inventory SET quantity = quantity - $1 WHERE sku = $2`, n, sku)
				return err
			}
			a, err := j.ClaimNext(ctx, e.db)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Stop()
			ran, err := steps.Run(a.Context(), db, a, "reserve", func(tx *sql.Tx) error { return write(tx, a, 1) })
			if err != nil || !ran {
				t.Fatalf("A's first step: ran %v, %v", ran, err)
			}
			boom := errors.New("boom")
			if ran, err := steps.Run(a.Context(), db, a, "ship", func(tx *sql.Tx) error {
				if err := write(tx, a, 10); err != nil {
					return err
				}
				return boom
			}); !errors.Is(err, boom) || ran {
				t.Fatalf("A's failing step: ran %v, err %v; want boom", ran, err)
			}
			// A is paused past its lease; B takes over.
			time.Sleep(lease + 50*time.Millisecond)
			b, err := j.ClaimNext(ctx, e.db)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			ran, err = steps.Run(b.Context(), db, b, "reserve", func(tx *sql.Tx) error {
				t.Error("B ran the step A committed")
				return nil
			})
			if err != nil || ran {
				t.Fatalf("B's reserve: ran %v, %v; want skipped", ran, err)
			}
			// A wakes: it can record neither the step B has not done yet nor
			// the one that is done.
			for _, step := range []string{"ship", "reserve"} {
				_, err := steps.Run(ctx, db, a, step, func(tx *sql.Tx) error {
					t.Errorf("superseded A ran step %s", step)
					return nil
				})
				fe := fencedErr(t, "A's "+step, err)
				if fe.StoredEpoch != b.Epoch || !strings.Contains(err.Error(), "claimed again at epoch") {
					t.Errorf("A's %s: %v; want it fenced by B's epoch %d", step, err, b.Epoch)
				}
			}
			if ran, err := steps.Run(b.Context(), db, b, "ship", func(tx *sql.Tx) error { return write(tx, b, 10) }); err != nil || !ran {
				t.Fatalf("B's ship (rolled back under A): ran %v, %v", ran, err)
			}
			if got := e.query(t, `SELECT string_agg(quantity::text, ',' ORDER BY sku) FROM inventory`); got != "99,90" {
				t.Errorf("quantities %s, want 99,90: each step once", got)
			}
			if got := e.query(t, `SELECT string_agg(step || '@' || (epoch = $1)::text, ',' ORDER BY step) FROM sqlfence_steps`, a.Epoch); got != "reserve@true,ship@false" {
				t.Errorf("steps table: %s", got)
			}
			if _, err := steps.Record(ctx, e.raw, b, ""); err == nil || !strings.Contains(err.Error(), "empty") {
				t.Errorf("empty step: %v", err)
			}
		})
	}
}

// TestStepOrderedBeforeTakeover: a superseded execution whose step
// transaction is still open when its lease runs out holds the takeover off;
// the successor's claim comes after it and sees the step done.
func TestStepOrderedBeforeTakeover(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const lease = 200 * time.Millisecond
	j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: -1})
	steps, err := claim.NewSteps(`"Work"."Steps"`)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, j.Schema(), `CREATE SCHEMA "Work"`, steps.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	a, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	tx, err := e.fenced.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if done, err := steps.Record(ctx, tx, a, "reserve"); err != nil || done {
		t.Fatalf("A's record: done %v, %v", done, err)
	}
	time.Sleep(lease + 50*time.Millisecond) // A's lease runs out with its step open
	if _, err := j.ClaimNext(ctx, e.db); !errors.Is(err, claim.ErrNoJob) {
		t.Fatalf("ClaimNext during A's open step: %v, want the job skipped", err)
	}
	var nc *claim.NotClaimableError
	if _, err := j.Claim(ctx, e.db, a.JobID); !errors.As(err, &nc) || !nc.Locked {
		t.Fatalf("Claim during A's open step: %v, want Locked", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	tx, err = e.fenced.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if done, err := steps.Record(ctx, tx, b, "reserve"); err != nil || !done {
		t.Fatalf("B's record of A's committed step: done %v, %v", done, err)
	}
	if _, err := claim.NewSteps("a.b.c"); err == nil || !strings.Contains(err.Error(), "steps table") {
		t.Errorf("bad steps table name: %v", err)
	}
}

// TestCheck: a lease that ended refuses Check without a
// statement; a completed claim's Check is fenced.
func TestCheck(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lg := newLedger(t, claim.LedgerConfig{RenewEvery: -1})
	e := newEnv(t, lg.Schema())
	l, err := lg.Claim(ctx, e.db, "m-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx, e.db); err != nil {
		t.Fatal(err)
	}
	tx, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := l.CompleteIn(ctx, mark(t, tx)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if fe := fencedErr(t, "Check after completion", l.Check(ctx, e.db)); !strings.Contains(fe.Error(), "already done at this claim's epoch") {
		t.Errorf("Check after completion: %v", fe)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, sqlfence.ErrFenced) {
		t.Errorf("a failed Check left the handler's context with cause %v, want ErrFenced", cause)
	}
	l.Stop()
	if err := l.Check(ctx, e.db); !errors.Is(err, claim.ErrEnded) {
		t.Errorf("Check after Stop: %v, want ErrEnded", err)
	}
}
