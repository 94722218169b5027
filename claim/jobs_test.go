package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg  claim.JobsConfig
		want string
	}{
		{claim.JobsConfig{Table: "a.b.c"}, `bad jobs table "a.b.c"`},
		{claim.JobsConfig{Table: "jobs;drop"}, `not allowed in an unquoted identifier`},
		{claim.JobsConfig{Columns: claim.JobColumns{Epoch: "x.y"}}, `single identifier`},
		{claim.JobsConfig{Columns: claim.JobColumns{Epoch: "status"}}, `both "status"`},
		{claim.JobsConfig{Lease: time.Second, RenewEvery: time.Second}, `not shorter than the lease`},
		{claim.JobsConfig{Lease: time.Microsecond}, `too short`},
		{claim.JobsConfig{Epochs: 7}, `unknown epoch source`},
		{claim.JobsConfig{Sequence: `"unterminated`}, `unbalanced double quote`},
	} {
		if _, err := claim.NewJobs(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to mention %q", c.cfg, err, c.want)
		}
	}
	j := newJobs(t, claim.JobsConfig{Returning: []string{"payload"}})
	if _, err := j.ClaimNext(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "0 dest arguments for 1 Returning") {
		t.Errorf("missing dest: err = %v", err)
	}
	// A Returning column the table lacks: the error says Schema did not create it.
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var payload string
	if _, err := j.ClaimNext(ctx, e.db, &payload); err == nil || !strings.Contains(err.Error(), `column "payload" does not exist`) ||
		!strings.Contains(err.Error(), "add the payload columns JobsConfig.Returning names to the table (ALTER TABLE jobs ADD COLUMN …)") {
		t.Errorf("Returning column missing from the table: err = %v", err)
	}
}

// TestSchemaNames runs the whole cycle on a table and sequence whose names
// need quoting, with every column renamed: the configured names reach the
// statements exactly, and nothing in them is read as SQL.
func TestSchemaNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `CREATE SCHEMA "Work"`)
	j := newJobs(t, claim.JobsConfig{
		Table:    `"Work"."Queue; DROP TABLE inventory"`,
		Sequence: `"Work"."Epoch %d 'seq'"`,
		Columns: claim.JobColumns{
			ID: `"Job Id"`, Status: "State", Epoch: `"Claim""Epoch"`, ExpiresAt: "lease_until", AvailableAt: "run_at",
		},
		Returning:  []string{`"Body"`},
		RenewEvery: -1,
	})
	e.exec(t, j.Schema())
	e.exec(t, j.Schema()) // idempotent
	e.exec(t, `ALTER TABLE "Work"."Queue; DROP TABLE inventory" ADD COLUMN "Body" text NOT NULL DEFAULT 'hello'`)
	e.exec(t, `INSERT INTO "Work"."Queue; DROP TABLE inventory" DEFAULT VALUES`)
	if j.Table() != "Work.Queue; DROP TABLE inventory" {
		t.Errorf("Table() = %q", j.Table())
	}
	ctx := context.Background()
	var body string
	l, err := j.ClaimNext(ctx, e.db, &body)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	if body != "hello" || l.Epoch != 1<<32+1 || l.JobID != int64(1) {
		t.Fatalf("claimed job %v epoch %d body %q, want job 1 epoch 1<<32 + 1 (timeline 1) body hello", l.JobID, l.Epoch, body)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.query(t, `SELECT state || ':' || "Claim""Epoch" FROM "Work"."Queue; DROP TABLE inventory"`); got != "done:4294967297" {
		t.Fatalf("row = %s, want done:4294967297", got)
	}
	_, err = j.Claim(ctx, e.db, int64(1), &body)
	if !errors.Is(err, claim.ErrDone) || !errors.Is(err, claim.ErrNotClaimable) || !strings.Contains(err.Error(), "done at epoch 4294967297") {
		t.Fatalf("claiming a done job: err = %v, want ErrDone", err)
	}
}

// TestClaimNextConcurrent: many workers drain one queue. Every job runs
// exactly once, and no two claims share an epoch.
func TestClaimNextConcurrent(t *testing.T) {
	t.Parallel()
	for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
		t.Run(src.String(), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			j := newJobs(t, claim.JobsConfig{Epochs: src})
			e.exec(t, j.Schema())
			const jobs, workers = 300, 16
			e.exec(t, fmt.Sprintf(`INSERT INTO jobs SELECT FROM generate_series(1, %d)`, jobs))
			ctx := context.Background()
			var (
				mu     sync.Mutex
				claims = map[any]int{}
				epochs = map[int64]any{}
				wg     sync.WaitGroup
			)
			for range workers {
				wg.Go(func() {
					for {
						l, err := j.ClaimNext(ctx, e.db)
						if errors.Is(err, claim.ErrNoJob) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						claims[l.JobID]++
						if other, dup := epochs[l.Epoch]; dup && src != claim.PerJobEpoch {
							t.Errorf("jobs %v and %v both got epoch %d", other, l.JobID, l.Epoch)
						}
						epochs[l.Epoch] = l.JobID
						mu.Unlock()
						if err := l.Complete(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if len(claims) != jobs {
				t.Fatalf("%d jobs claimed, want %d", len(claims), jobs)
			}
			for id, n := range claims {
				if n != 1 {
					t.Errorf("job %v claimed %d times", id, n)
				}
			}
			if got := e.query(t, `SELECT count(*) FROM jobs WHERE status = 'done'`); got != fmt.Sprint(jobs) {
				t.Errorf("%s jobs done, want %d", got, jobs)
			}
		})
	}
}

// epochLog installs a trigger that refuses any claim whose epoch does not
// exceed the row's previous one, and logs every (old, new) pair, so the test
// can check the claims of one job form a single strictly increasing chain.
func epochLog(table, column string) string {
	return fmt.Sprintf(`
CREATE TABLE epoch_log (old bigint NOT NULL, new bigint NOT NULL);
CREATE FUNCTION log_epoch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO epoch_log VALUES (0, NEW.%[2]s);
	ELSIF NEW.%[2]s <> OLD.%[2]s THEN
		IF NEW.%[2]s <= OLD.%[2]s THEN
			RAISE EXCEPTION 'epoch went from %% to %%', OLD.%[2]s, NEW.%[2]s;
		END IF;
		INSERT INTO epoch_log VALUES (OLD.%[2]s, NEW.%[2]s);
	END IF;
	RETURN NULL;
END $$;
-- AFTER, not BEFORE: an INSERT ... ON CONFLICT fires BEFORE INSERT triggers for
-- the attempted row even when it then takes the DO UPDATE path.
CREATE TRIGGER log_epoch AFTER INSERT OR UPDATE ON %[1]s FOR EACH ROW EXECUTE FUNCTION log_epoch();
`, table, column)
}

// hammer has workers claim one job over and over — releasing it, completing
// nothing, or abandoning it to a 1ms lease — and checks that every successful
// claim got its own epoch and that the job's epochs form one increasing chain.
func hammer(t *testing.T, e *env, claimOnce func(ctx context.Context) (*claim.Lease, error)) {
	const workers, rounds = 16, 40
	ctx := context.Background()
	var (
		mu  sync.Mutex
		got = map[int64]bool{}
		wg  sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				l, err := claimOnce(ctx)
				if errors.Is(err, claim.ErrNotClaimable) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if got[l.Epoch] {
					t.Errorf("epoch %d handed out twice", l.Epoch)
				}
				got[l.Epoch] = true
				mu.Unlock()
				if (w+r)%2 == 0 {
					// The 1ms lease may have run out and the job moved on:
					// then the release is fenced, which is the point.
					if err := l.Release(ctx, 0); err != nil && !errors.Is(err, sqlfence.ErrFenced) {
						t.Error(err)
					}
				} else {
					l.Stop() // the 1ms lease runs out on its own
				}
			}
		})
	}
	wg.Wait()
	if len(got) < workers {
		t.Fatalf("only %d successful claims; the test did not contend", len(got))
	}
	rows, err := e.raw.Query(`SELECT old, new FROM epoch_log ORDER BY new`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prev int64
	n := 0
	for rows.Next() {
		var old, new int64
		if err := rows.Scan(&old, &new); err != nil {
			t.Fatal(err)
		}
		if old != prev {
			t.Fatalf("claim to epoch %d replaced epoch %d, but the previous claim was %d: two claims raced", new, old, prev)
		}
		if !got[new] {
			t.Fatalf("epoch %d is in the table but no claimer received it", new)
		}
		prev = new
		n++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(got) {
		t.Fatalf("%d epochs logged, %d received", n, len(got))
	}
}

// TestEpochsStrictlyIncrease: concurrent claims of one job never share an
// epoch, and each claim's epoch exceeds the one before it — checked by the
// database itself, in a trigger, on every claim.
func TestEpochsStrictlyIncrease(t *testing.T) {
	t.Parallel()
	for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
		t.Run("jobs "+src.String(), func(t *testing.T) {
			t.Parallel()
			j := newJobs(t, claim.JobsConfig{Epochs: src, Lease: time.Millisecond, RenewEvery: -1})
			e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`, epochLog("jobs", "lease_epoch"))
			hammer(t, e, func(ctx context.Context) (*claim.Lease, error) { return j.Claim(ctx, e.db, int64(1)) })
			if src == claim.PerJobEpoch && e.query(t, `SELECT bool_and(new = old + 1 OR old = 0 AND new = (1::bigint << 32) + 1) FROM epoch_log`) != "true" {
				t.Error("per-job epochs skipped a value")
			}
		})
		t.Run("claim table "+src.String(), func(t *testing.T) {
			t.Parallel()
			lg := newLedger(t, claim.LedgerConfig{Epochs: src, Lease: time.Millisecond, RenewEvery: -1})
			e := newEnv(t, lg.Schema(), epochLog("sqlfence_claims", "lease_epoch"))
			hammer(t, e, func(ctx context.Context) (*claim.Lease, error) { return lg.Claim(ctx, e.db, "msg-1") })
		})
	}
}

// TestExpiryAndTakeover is the paused worker. A claims job 1 and stops
// renewing (its keeper is off: as good as a SIGSTOP). While A's lease is live
// nobody else gets the job. When it runs out B takes over with a higher epoch
// and writes; A wakes and can neither renew, nor complete, nor release, nor
// write the row B wrote.
func TestExpiryAndTakeover(t *testing.T) {
	t.Parallel()
	for _, src := range []claim.EpochSource{claim.GlobalEpoch, claim.PerJobEpoch, claim.CounterEpoch} {
		for _, op := range []string{"renew", "complete", "release", "write"} {
			t.Run(src.String()+" "+op, func(t *testing.T) {
				t.Parallel()
				const lease = 300 * time.Millisecond
				j := newJobs(t, claim.JobsConfig{Epochs: src, Lease: lease, RenewEvery: -1, Returning: []string{"sku"}})
				e := newEnv(t, j.Schema(), `ALTER TABLE jobs ADD COLUMN sku text NOT NULL DEFAULT 'a'; INSERT INTO jobs DEFAULT VALUES`)
				ctx := context.Background()
				var sku string

				a, err := j.Claim(ctx, e.db, int64(1), &sku)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := j.Claim(ctx, e.db, int64(1), &sku); !errors.Is(err, claim.ErrNotClaimable) || errors.Is(err, claim.ErrDone) ||
					!strings.Contains(err.Error(), fmt.Sprintf("claimed at epoch %d", a.Epoch)) {
					t.Fatalf("claim during A's lease: err = %v, want ErrNotClaimable naming epoch %d", err, a.Epoch)
				}
				if _, err := j.ClaimNext(ctx, e.db, &sku); !errors.Is(err, claim.ErrNoJob) {
					t.Fatalf("ClaimNext during A's lease: err = %v, want ErrNoJob", err)
				}
				// A writes while it holds the job: legitimate, and it stays.
				if _, err := e.fenced.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, sku); err != nil {
					t.Fatal(err)
				}

				time.Sleep(lease + 50*time.Millisecond) // A is paused past its lease
				b, err := j.ClaimNext(ctx, e.db, &sku)
				if err != nil {
					t.Fatalf("takeover after expiry: %v", err)
				}
				defer b.Stop()
				if b.JobID != a.JobID || b.Epoch <= a.Epoch {
					t.Fatalf("B claimed job %v at epoch %d; want job %v above A's epoch %d", b.JobID, b.Epoch, a.JobID, a.Epoch)
				}
				if _, err := e.fenced.ExecContext(b.Context(), `UPDATE inventory SET quantity = quantity - 10 WHERE sku = $1`, sku); err != nil {
					t.Fatal(err)
				}

				// A wakes.
				var aerr error
				switch op {
				case "renew":
					aerr = a.Renew(ctx)
				case "complete":
					aerr = a.Complete(ctx)
				case "release":
					aerr = a.Release(ctx, 0)
				case "write":
					_, aerr = e.fenced.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, sku)
				}
				fe := fencedErr(t, "A's "+op, aerr)
				if fe.StoredEpoch != b.Epoch || fe.Epoch != a.Epoch {
					t.Errorf("A's %s: fence error has epoch %d stored %d, want %d and %d: %v", op, fe.Epoch, fe.StoredEpoch, a.Epoch, b.Epoch, fe)
				}
				if op != "write" && (fe.Table != "jobs" || !strings.Contains(fe.Error(), fmt.Sprintf("claimed again at epoch %d", b.Epoch))) {
					t.Errorf("A's %s: error does not name the table and the successor's epoch: %v", op, fe)
				}
				// Whatever A tried, its handler's context is now cancelled
				// with a cause that says it was fenced.
				select {
				case <-a.Context().Done():
				case <-time.After(time.Second):
					t.Fatalf("A's context was not cancelled after its %s was fenced", op)
				}
				if cause := context.Cause(a.Context()); !errors.Is(cause, sqlfence.ErrFenced) {
					t.Errorf("A's context cause = %v, want ErrFenced", cause)
				}
				if op == "renew" && !errors.Is(context.Cause(a.Context()), claim.ErrLeaseLost) {
					t.Errorf("A's context cause = %v, want ErrLeaseLost after a refused renewal", context.Cause(a.Context()))
				}
				a.Stop()

				if got := e.query(t, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`); got != fmt.Sprintf("89:%d", b.Epoch) {
					t.Errorf("inventory a = %s, want 89:%d (A's write under its lease, then B's)", got, b.Epoch)
				}
				if err := b.Complete(ctx); err != nil {
					t.Fatalf("B's completion: %v", err)
				}
				if got := e.query(t, `SELECT status || ':' || lease_epoch FROM jobs`); got != fmt.Sprintf("done:%d", b.Epoch) {
					t.Errorf("job = %s, want done:%d", got, b.Epoch)
				}
			})
		}
	}
}

// TestRenewalFailsAfterTakeover: the keeper itself notices. A's keeper runs;
// B takes the job over (A's lease is moved into the past, as if A had been
// paused); A's next renewal is refused and the keeper cancels A's handler
// with a cause that is both ErrLeaseLost and ErrFenced.
func TestRenewalFailsAfterTakeover(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{Lease: 5 * time.Second, RenewEvery: 50 * time.Millisecond})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	a, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	first := a.ExpiresAt()
	for wait := time.Now().Add(5 * time.Second); !a.ExpiresAt().After(first); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("the keeper did not renew: lease end still %v", first)
		}
	}
	var b *claim.Lease
	for b == nil { // the keeper may renew between the two statements; try again
		e.exec(t, `UPDATE jobs SET lease_expires_at = now() - interval '1 second'`)
		b, err = j.Claim(ctx, e.db, a.JobID)
		if err != nil && !errors.Is(err, claim.ErrNotClaimable) {
			t.Fatal(err)
		}
	}
	defer b.Stop()
	select {
	case <-a.Context().Done():
	case <-time.After(2 * time.Second):
		t.Fatal("A's keeper did not notice the takeover")
	}
	cause := context.Cause(a.Context())
	var lost *claim.LostError
	if !errors.As(cause, &lost) || !errors.Is(cause, claim.ErrLeaseLost) {
		t.Fatalf("cause = %v, want a *claim.LostError", cause)
	}
	fe := fencedErr(t, "A's lost lease", cause)
	if fe.StoredEpoch != b.Epoch || lost.Epoch != a.Epoch || lost.Table != "jobs" {
		t.Errorf("lost lease %+v, fence %+v; want A's epoch %d superseded by %d", lost, fe, a.Epoch, b.Epoch)
	}
	if err := a.Complete(ctx); !errors.Is(err, sqlfence.ErrFenced) {
		t.Errorf("A's completion after losing the lease: err = %v, want ErrFenced", err)
	}
	if err := b.Complete(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseRunsOut: renewals that cannot reach the arbiter are retried until
// the lease would run out, and then the handler is stopped — before a
// successor can take over — with ErrLeaseLost, not ErrFenced: nobody has
// superseded it yet, but nothing stops someone from doing so.
func TestLeaseRunsOut(t *testing.T) {
	t.Parallel()
	const lease = 400 * time.Millisecond
	j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: 50 * time.Millisecond})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	conn, err := sql.Open("pgx", e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	gone := mark(t, conn)
	start := time.Now()
	l, err := j.ClaimNext(context.Background(), gone)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	conn.Close() // the arbiter is out of reach from now on
	select {
	case <-l.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the handler kept running after its lease ran out")
	}
	// The keeper's deadline is the claim's send time plus the lease on this
	// process's monotonic clock: never before start+lease, and soon after.
	took := time.Since(start)
	if took < lease {
		t.Errorf("the handler was stopped after %v, before its %v lease ran out", took, lease)
	}
	if took > lease+750*time.Millisecond {
		t.Errorf("the handler was stopped %v after the claim, long after its %v lease had run out", took, lease)
	}
	cause := context.Cause(l.Context())
	if !errors.Is(cause, claim.ErrLeaseLost) || errors.Is(cause, sqlfence.ErrFenced) || !strings.Contains(cause.Error(), "database is closed") {
		t.Fatalf("cause = %v, want ErrLeaseLost with the renewal's error, not ErrFenced", cause)
	}
}

// TestGlobalEpochTradeoff: with global epochs, two jobs that write the same
// row fence each other by claim order. Job 2 claimed after job 1 and wrote
// first, so job 1's write is fenced although its claim is still valid; job 1
// releases, is claimed again with a fresh epoch, and its write lands.
func TestGlobalEpochTradeoff(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	write := `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`
	one, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Stop()
	two, err := j.Claim(ctx, e.db, int64(2))
	if err != nil {
		t.Fatal(err)
	}
	defer two.Stop()
	if _, err := e.fenced.ExecContext(two.Context(), write); err != nil {
		t.Fatal(err)
	}
	_, err = e.fenced.ExecContext(one.Context(), write)
	if fe := fencedErr(t, "job 1's write", err); fe.StoredEpoch != two.Epoch {
		t.Fatalf("fenced by epoch %d, want job 2's %d", fe.StoredEpoch, two.Epoch)
	}
	select {
	case <-one.Context().Done():
	default:
		t.Fatal("the fence did not cancel job 1's handler")
	}
	if !errors.Is(context.Cause(one.Context()), sqlfence.ErrFenced) {
		t.Fatalf("cause = %v, want ErrFenced", context.Cause(one.Context()))
	}
	if err := one.Release(ctx, 0); err != nil {
		t.Fatalf("job 1's claim is still valid, its release must succeed: %v", err)
	}
	again, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	if again.Epoch <= two.Epoch {
		t.Fatalf("job 1's new epoch %d is not above job 2's %d", again.Epoch, two.Epoch)
	}
	if _, err := e.fenced.ExecContext(again.Context(), write); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*claim.Lease{again, two} {
		if err := l.Complete(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "98" {
		t.Fatalf("quantity %s, want 98: both jobs applied once", got)
	}
}

// TestCompleteIn: completion inside the handler's transaction. A superseded
// holder's completion is refused, and rolling back takes its writes with it.
func TestCompleteIn(t *testing.T) {
	t.Parallel()
	const lease = 200 * time.Millisecond
	j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: -1})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	handle := func(l *claim.Lease) error {
		tx, err := e.fenced.BeginTx(l.Context(), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(l.Context(), `UPDATE inventory SET quantity = quantity - 5 WHERE sku = 'b'`); err != nil {
			return err
		}
		if err := l.CompleteIn(ctx, tx); err != nil {
			return err
		}
		return tx.Commit()
	}
	a, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	time.Sleep(lease + 50*time.Millisecond)
	b, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	// A wakes before B has written anything: its business write passes the
	// fence (nobody wrote the row since), but its completion does not.
	fencedErr(t, "A's transactional completion", handle(a))
	if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'b'`); got != "100" {
		t.Fatalf("quantity %s after A's rolled-back transaction, want 100", got)
	}
	if err := handle(b); err != nil {
		t.Fatal(err)
	}
	b.Stop()
	if got := e.query(t, `SELECT quantity || ':' || (SELECT status FROM jobs) FROM inventory WHERE sku = 'b'`); got != "95:done" {
		t.Fatalf("after B: %s, want 95:done", got)
	}
}

func TestSecondFinish(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	l, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Complete(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, time.Second); !errors.Is(err, claim.ErrEnded) {
		t.Fatalf("release after completion: err = %v, want ErrEnded", err)
	}
	if err := l.Renew(ctx); !errors.Is(err, claim.ErrEnded) {
		t.Fatalf("renewal after completion: err = %v, want ErrEnded", err)
	}
	if err := l.CompleteIn(ctx, e.raw); !errors.Is(err, claim.ErrEnded) {
		t.Fatalf("second completion: err = %v, want ErrEnded", err)
	}
	if cause := context.Cause(l.Context()); !errors.Is(cause, claim.ErrEnded) {
		t.Fatalf("cause after completion = %v, want ErrEnded", cause)
	}
	l.Stop() // harmless
}

// TestReleaseDelay: a released job is not claimable before its retry time.
func TestReleaseDelay(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	l, err := j.ClaimNext(ctx, e.db)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := j.ClaimNext(ctx, e.db); !errors.Is(err, claim.ErrNoJob) {
		t.Fatalf("ClaimNext: err = %v, want ErrNoJob", err)
	}
	_, err = j.Claim(ctx, e.db, l.JobID)
	if !errors.Is(err, claim.ErrNotClaimable) || !strings.Contains(err.Error(), "pending, available at") {
		t.Fatalf("Claim: err = %v, want not claimable until its retry time", err)
	}
	if _, err := j.Claim(ctx, e.db, int64(42)); !errors.Is(err, claim.ErrNotClaimable) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("Claim of a missing job: err = %v", err)
	}
}
