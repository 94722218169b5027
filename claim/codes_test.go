package claim_test

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

var codeRE = regexp.MustCompile(`\[SF6\d\d\]`)

// TestErrorCodes: the claim helpers' errors carry a rule code in their text, as
// the driver's refusals do; a fenced completion carries its code in the
// *sqlfence.Error; after a fence, Lease.Err gives later statements' errors the
// cause.
func TestErrorCodes(t *testing.T) {
	for _, err := range []error{claim.ErrNoJob, claim.ErrNotClaimable, claim.ErrDone, claim.ErrLeaseLost, claim.ErrEnded,
		claim.ErrFailover, claim.ErrNoSynchronousStandby, claim.ErrOutcomeUnknown, claim.ErrUnorderedSequence} {
		if !codeRE.MatchString(err.Error()) {
			t.Errorf("%q has no rule code", err)
		}
	}
	for _, cfg := range []claim.JobsConfig{{Lease: time.Microsecond}, {Lease: time.Second, RenewEvery: 2 * time.Second}, {Table: "a.b.c"}, {TakeoverWait: -1}} {
		if _, err := claim.NewJobs(cfg); err == nil || !regexp.MustCompile(`^claim \[SF617\]: `).MatchString(err.Error()) {
			t.Errorf("NewJobs(%+v): %v, want SF617", cfg, err)
		}
	}

	// A lease long enough for the held job to be asked for under the race detector,
	// or with the WebAssembly parser on a loaded machine.
	jobs, err := claim.NewJobs(claim.JobsConfig{Lease: 5 * time.Second, RenewEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	arbiter, db, done := exampleDBs("version: 1\ntables: [inventory]\n", jobs.Schema(),
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory VALUES ('apple', 10, 0)`)
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := jobs.ClaimNext(ctx, arbiter); !errors.Is(err, claim.ErrNoJob) || !codeRE.MatchString(err.Error()) {
		t.Errorf("ClaimNext on an empty queue: %v", err)
	}
	// The Claim's statements are decided before the lease starts: a first sight under
	// the WebAssembly parser on a loaded machine can take longer than the lease.
	if l, err := jobs.Claim(ctx, arbiter, -1); err == nil {
		l.Stop()
		t.Fatal("Claim of a job that does not exist succeeded")
	}
	if _, err := arbiter.ExecContext(ctx, `INSERT INTO jobs DEFAULT VALUES`); err != nil {
		t.Fatal(err)
	}
	stale, err := jobs.ClaimNext(ctx, arbiter)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Stop()
	if _, err := jobs.Claim(ctx, arbiter, stale.JobID); !errors.Is(err, claim.ErrNotClaimable) || !codeRE.MatchString(err.Error()) {
		t.Errorf("Claim of a held job: %v", err)
	}
	time.Sleep(5100 * time.Millisecond) // past the lease
	next, err := jobs.ClaimNext(ctx, arbiter)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Stop()
	const write = `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'apple'`
	if _, err := db.ExecContext(next.Context(), write); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(stale.Context(), write); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("stale write: %v", err)
	}
	<-stale.Context().Done()
	_, err = db.ExecContext(stale.Context(), `SELECT 1`)
	if errors.Is(err, sqlfence.ErrFenced) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a statement on the cancelled context: %v", err)
	}
	if err := stale.Err(err); !errors.Is(err, sqlfence.ErrFenced) || !errors.Is(err, context.Canceled) || !codeRE.MatchString(err.Error()) && !regexp.MustCompile(`SF10\d`).MatchString(err.Error()) {
		t.Errorf("Lease.Err after a fence: %v, want it to match ErrFenced and context.Canceled", err)
	}
	if stale.Err(nil) != nil || next.Err(errors.New("x")).Error() != "x" {
		t.Errorf("Lease.Err changes nil or an error on a live lease")
	}
	var fe *sqlfence.Error
	if err := stale.Complete(ctx); !errors.As(err, &fe) || fe.Code != "SF102" {
		t.Errorf("stale completion: %v, want SF102", err)
	}
	if err := next.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.Complete(ctx); !errors.Is(err, claim.ErrEnded) || !codeRE.MatchString(err.Error()) {
		t.Errorf("second completion: %v, want SF613", err)
	}
	if err := next.Err(context.Canceled); !errors.Is(err, claim.ErrEnded) {
		t.Errorf("Lease.Err after Complete: %v, want ErrEnded", err)
	}
}
