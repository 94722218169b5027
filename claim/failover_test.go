package claim_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// TestFailoverAlarm: a renewal, a claim check or a completion that finds the job's
// epoch below the lease's (the arbiter lost the claim) stops the lease with a
// *FailoverError — ErrFailover and ErrLeaseLost, never ErrFenced: the claim was not
// superseded — logs it, and calls OnFailover; so does a timeline that moved under
// a live lease.
func TestFailoverAlarm(t *testing.T) {
	t.Parallel()
	for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
		t.Run(src.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var logged bytes.Buffer
			var seen atomic.Int32
			j := newJobs(t, claim.JobsConfig{Epochs: src, RenewEvery: -1,
				Logger:     slog.New(slog.NewTextHandler(&logged, nil)),
				OnFailover: func(*claim.FailoverError) { seen.Add(1) }})
			e := newEnv(t, j.Schema(), `INSERT INTO jobs SELECT FROM generate_series(1, 4)`)

			// The claim was lost: the row went back to the epoch before it.
			for i, op := range []string{"renewal", "claim check", "completion"} {
				l, err := j.Claim(ctx, e.db, int64(i+1))
				if err != nil {
					t.Fatal(err)
				}
				e.exec(t, `UPDATE jobs SET lease_epoch = lease_epoch - 1 WHERE id = $1`, i+1)
				switch op {
				case "renewal":
					err = l.Renew(ctx)
				case "claim check":
					err = l.Check(ctx, e.raw)
				case "completion":
					err = l.Complete(ctx)
				}
				var fe *claim.FailoverError
				if !errors.As(err, &fe) || !errors.Is(err, claim.ErrFailover) || !errors.Is(err, claim.ErrLeaseLost) || errors.Is(err, sqlfence.ErrFenced) {
					t.Fatalf("%s of a lost claim: %v, want a *FailoverError (ErrFailover, ErrLeaseLost, not ErrFenced)", op, err)
				}
				if !fe.HasStored || fe.Stored != l.Epoch-1 || fe.Op != op || fe.ClaimTimeline != 1 || fe.Timeline != 1 {
					t.Errorf("%s: %+v", op, fe)
				}
				for _, want := range []string{"below this claim's", "do not retry with this epoch", "synchronous"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: %q lacks %q", op, err, want)
					}
				}
				if cause := context.Cause(l.Context()); !errors.Is(cause, claim.ErrFailover) || errors.Is(cause, sqlfence.ErrFenced) {
					t.Errorf("%s: the handler's context ended with %v, want ErrFailover", op, cause)
				}
				// Through sqlfence the lost claim writes nothing either: the
				// claim check finds no row at its epoch.
				if _, err := e.fenced.ExecContext(sqlfence.WithClaim(sqlfence.WithEpoch(ctx, l.Epoch), sqlfence.Claim{Table: "jobs", KeyColumn: "id", EpochColumn: "lease_epoch", Key: l.JobID, Epoch: l.Epoch}),
					`UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); err == nil {
					t.Errorf("%s: a claim-checked write of the lost claim passed", op)
				}
				l.Stop()
			}

			// The timeline moved under a live lease: the claim is there, the
			// arbiter failed over.
			l, err := j.Claim(ctx, e.db, int64(4))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Stop()
			claim.SetClaimTimeline(l, 7)
			err = l.Renew(ctx)
			var fe *claim.FailoverError
			if !errors.As(err, &fe) || fe.HasStored || fe.ClaimTimeline != 7 || fe.Timeline != 1 || !strings.Contains(err.Error(), "failed over while the lease was live") {
				t.Fatalf("renewal after a timeline change: %v (%+v)", err, fe)
			}
			if cause := context.Cause(l.Context()); !errors.Is(cause, claim.ErrFailover) || !errors.Is(cause, claim.ErrLeaseLost) {
				t.Errorf("the handler's context ended with %v, want ErrFailover", cause)
			}
			if n := seen.Load(); n != 4 {
				t.Errorf("OnFailover called %d times, want 4", n)
			}
			if n := strings.Count(logged.String(), "failover under a live lease"); n != 4 {
				t.Errorf("%d log lines, want 4:\n%s", n, logged.String())
			}
		})
	}
}

// TestClaimsCommitSynchronously: whatever the session's synchronous_commit, a
// claim, a claim check and a completion leave the transaction they run in committing
// with synchronous_commit on, so a synchronous standby has them before they are
// acknowledged.
func TestClaimsCommitSynchronously(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	lg := newLedger(t, claim.LedgerConfig{RenewEvery: -1})
	e := newEnv(t, j.Schema(), lg.Schema(), `INSERT INTO jobs SELECT FROM generate_series(1, 3)`)
	setting := func(tx *sql.Tx) string {
		var s string
		if err := tx.QueryRowContext(ctx, `SHOW synchronous_commit`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, value := range []string{"off", "local", "remote_write"} {
		for _, step := range []string{"claim", "ledger claim", "claim check", "completion"} {
			tx, err := e.raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = `+value); err != nil {
				t.Fatal(err)
			}
			switch step {
			case "claim":
				_, err = j.ClaimNext(ctx, tx)
			case "ledger claim":
				_, err = lg.Claim(ctx, tx, "m-"+value)
			default:
				var l *claim.Lease
				if l, err = j.ClaimNext(ctx, e.raw); err != nil {
					t.Fatal(err)
				}
				e.exec(t, `UPDATE jobs SET status = 'pending', lease_epoch = 0 WHERE id = $1`, l.JobID) // for the next round
				e.exec(t, `UPDATE jobs SET status = 'claimed', lease_epoch = $2 WHERE id = $1`, l.JobID, l.Epoch)
				if step == "claim check" {
					err = l.Check(ctx, tx)
				} else {
					err = l.CompleteIn(ctx, tx)
				}
				defer l.Stop()
			}
			if err != nil {
				t.Fatalf("%s with synchronous_commit %s: %v", step, value, err)
			}
			if got := setting(tx); got != "on" {
				t.Errorf("%s with synchronous_commit %s: the transaction commits with %s, want on", step, value, got)
			}
			tx.Rollback()
			e.exec(t, `UPDATE jobs SET status = 'pending', lease_epoch = 0`)
		}
	}
}

// TestRequireSynchronousStandby: on a server without a synchronous standby, claims
// are refused with ErrNoSynchronousStandby and a message that says how to get one;
// nothing is claimed.
func TestRequireSynchronousStandby(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := newJobs(t, claim.JobsConfig{RequireSynchronousStandby: true})
	lg := newLedger(t, claim.LedgerConfig{RequireSynchronousStandby: true})
	e := newEnv(t, j.Schema(), lg.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	_, errNext := j.ClaimNext(ctx, e.db)
	_, errClaim := j.Claim(ctx, e.db, int64(1))
	_, errLedger := lg.Claim(ctx, e.db, "m-1")
	for _, err := range []error{errNext, errClaim, errLedger} {
		if !errors.Is(err, claim.ErrNoSynchronousStandby) || !strings.Contains(err.Error(), "synchronous_standby_names empty") || !strings.Contains(err.Error(), "synchronous_mode_strict") {
			t.Errorf("claim without a synchronous standby: %v, want ErrNoSynchronousStandby saying how to configure one", err)
		}
	}
	if got := e.query(t, `SELECT count(*) FROM jobs WHERE status <> 'pending'`) + e.query(t, `SELECT count(*) FROM sqlfence_claims`); got != "00" {
		t.Errorf("refused claims claimed something: %s", got)
	}
}

// TestClaimOutcomeUnknown: a claim whose connection is lost while it is in flight
// returns ErrOutcomeUnknown, never a lease.
func TestClaimOutcomeUnknown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	j := newJobs(t, claim.JobsConfig{Epochs: claim.CounterEpoch, RenewEvery: -1})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	// Another transaction holds the counter row: the claim waits in flight.
	blocker, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(ctx, `UPDATE sqlfence_epoch_counter SET value = value + 1`); err != nil {
		t.Fatal(err)
	}
	conn, err := e.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	if err := conn.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := j.ClaimNext(ctx, conn)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for e.query(t, `SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, pid) != "Lock" {
		if time.Now().After(deadline) {
			t.Fatal("the claim never waited for the counter")
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.exec(t, `SELECT pg_terminate_backend($1)`, pid)
	err = <-done
	if !errors.Is(err, claim.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may have committed") {
		t.Fatalf("claim whose connection was lost: %v, want ErrOutcomeUnknown", err)
	}
}
