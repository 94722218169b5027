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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// fencedWith opens the env's database through sqlfence under another policy.
func (e *env) fencedWith(t testing.TB, policy string) *sql.DB {
	t.Helper()
	pol, err := sqlfence.ParsePolicy([]byte(existingClaims(t, e.raw, policy)), "claimcheck_test")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	t.Cleanup(func() { db.Close() })
	return db
}

const staleClaimPolicy = testPolicy + "stale: claim\n"

// expire moves a claim's lease into the past, as if its worker had been paused.
func (e *env) expire(t testing.TB, id int64) {
	e.exec(t, `UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, id)
}

// TestClaimCheckedStaleStep is the issue: A claims, writes row a (step 1), is
// paused past its lease; B claims the job and writes nothing yet. A wakes and
// writes row b, which B never wrote: the row's epoch alone would accept it; the
// claim check fences it, for every statement shape.
func TestClaimCheckedStaleStep(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct{ name, sql string }{
		{"update", `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'b'`},
		{"delete", `DELETE FROM inventory WHERE sku = 'b'`},
		{"insert", `INSERT INTO inventory (sku, quantity) VALUES ('c', 1)`},
		{"insert select", `INSERT INTO inventory (sku, quantity) SELECT 'c', 1`},
		{"upsert", `INSERT INTO inventory (sku, quantity) VALUES ('b', 1) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`},
		{"merge", `MERGE INTO inventory t USING (SELECT 'b' AS sku) s ON t.sku = s.sku WHEN MATCHED THEN UPDATE SET quantity = 0`},
		{"merge delete", `MERGE INTO inventory t USING (SELECT 'b' AS sku) s ON t.sku = s.sku WHEN MATCHED THEN DELETE`},
		{"cte", `WITH u AS (UPDATE inventory SET quantity = 0 WHERE sku = 'b' RETURNING 1) SELECT count(*) FROM u`},
		{"returning", `UPDATE inventory SET quantity = 0 WHERE sku = 'b' RETURNING quantity`},
	} {
		for _, policy := range []string{testPolicy, staleClaimPolicy} {
			t.Run(shape.name+" "+strings.TrimSpace(policy[strings.LastIndex(strings.TrimSpace(policy), "\n")+1:]), func(t *testing.T) {
				t.Parallel()
				j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
				e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
				fenced := e.fencedWith(t, policy)
				ctx := context.Background()
				a, err := j.Claim(ctx, e.db, int64(1))
				if err != nil {
					t.Fatal(err)
				}
				defer a.Stop()
				if _, err := fenced.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); err != nil {
					t.Fatal(err)
				}
				e.expire(t, 1)
				b, err := j.Claim(ctx, e.db, int64(1))
				if err != nil {
					t.Fatal(err)
				}
				defer b.Stop()
				var werr error
				if strings.Contains(shape.sql, "RETURNING") || strings.HasPrefix(shape.sql, "WITH") {
					rows, err := fenced.QueryContext(a.Context(), shape.sql)
					if err == nil {
						for rows.Next() {
						}
						err = rows.Err()
						rows.Close()
					}
					werr = err
				} else {
					_, werr = fenced.ExecContext(a.Context(), shape.sql)
				}
				if shape.name == "cte" {
					// A data-modifying CTE reports no row count: its superseded
					// write matched no row, and the data shows it.
					if werr != nil && !errors.Is(werr, sqlfence.ErrFenced) {
						t.Fatal(werr)
					}
				} else {
					fe := fencedErr(t, "A's stale write", werr)
					if !strings.Contains(fe.Error(), "superseded") || fe.StoredEpoch != b.Epoch {
						t.Errorf("A's fence does not say it was superseded by epoch %d: %v", b.Epoch, fe)
					}
				}
				if got := e.query(t, `SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`); got != fmt.Sprintf("a:99:%d b:100:0", a.Epoch) {
					t.Errorf("inventory = %s: A's stale write landed", got)
				}
			})
		}
	}
}

// TestClaimCheckedLedger: the same through a claim table (text keys).
func TestClaimCheckedLedger(t *testing.T) {
	t.Parallel()
	l := newLedger(t, claim.LedgerConfig{RenewEvery: -1})
	e := newEnv(t, l.Schema())
	ctx := context.Background()
	a, err := l.Claim(ctx, e.db, "msg-1")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	e.exec(t, `UPDATE sqlfence_claims SET lease_expires_at = now() - interval '1 second'`)
	b, err := l.Claim(ctx, e.db, "msg-1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	_, err = e.fenced.ExecContext(a.Context(), `INSERT INTO inventory (sku, quantity) VALUES ('c', 1)`)
	if fe := fencedErr(t, "A's insert", err); !strings.Contains(fe.Error(), "superseded") {
		t.Errorf("fence does not say superseded: %v", fe)
	}
	if _, err := e.fenced.ExecContext(b.Context(), `INSERT INTO inventory (sku, quantity) VALUES ('c', 1)`); err != nil {
		t.Fatalf("B's insert: %v", err)
	}
}

// TestTakeoverAfterOpenTransaction: a takeover comes after every write of the old
// claim's open transaction. While A's transaction (which wrote under its claim)
// is open, Claim reports the job locked and ClaimNext skips it; after A commits,
// B claims and sees A's write. The other order: a takeover in progress makes A's
// check wait, and once the takeover commits A's write is fenced.
func TestTakeoverAfterOpenTransaction(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	a, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	tx, err := e.fenced.BeginTx(a.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	e.expire(t, 1) // A's lease ran out while its transaction is open (renewal-like UPDATE: not blocked)
	_, err = j.Claim(ctx, e.db, int64(1))
	var nc *claim.NotClaimableError
	if !errors.As(err, &nc) || !nc.Locked || !strings.Contains(err.Error(), "transaction open") {
		t.Fatalf("takeover during A's open transaction: err = %v, want NotClaimableError.Locked", err)
	}
	if _, err := j.ClaimNext(ctx, e.db); !errors.Is(err, claim.ErrNoJob) {
		t.Fatalf("ClaimNext during A's open transaction: err = %v, want ErrNoJob (skipped)", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatalf("takeover after A committed: %v", err)
	}
	defer b.Stop()
	if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "99" {
		t.Fatalf("B sees quantity %s, want A's committed 99", got)
	}

	// The other order: C takes over inside a transaction that stays open; B's
	// claim-checked write waits for it, and is fenced once it commits.
	e.exec(t, `UPDATE jobs SET lease_expires_at = now() - interval '1 second'`)
	ttx, err := e.raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := j.Claim(ctx, mark(t, ttx), int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	done := make(chan error, 1)
	go func() {
		_, err := e.fenced.ExecContext(b.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'b'`)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("B's write did not wait for the takeover in progress: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := ttx.Commit(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		fencedErr(t, "B's write after C's takeover committed", err)
	case <-time.After(5 * time.Second):
		t.Fatal("B's write still waits after the takeover committed")
	}
	if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'b'`); got != "100" {
		t.Fatalf("quantity b = %s: B's write landed after its claim was superseded", got)
	}
}

// TestRenewalDuringHandlerTransaction: the keeper renews while the handler holds
// an open transaction with claim-checked writes (FOR KEY SHARE on the job row does
// not block the renewal's UPDATE, which changes no key column).
func TestRenewalDuringHandlerTransaction(t *testing.T) {
	t.Parallel()
	const lease = 600 * time.Millisecond
	j := newJobs(t, claim.JobsConfig{Lease: lease, RenewEvery: 100 * time.Millisecond})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	a, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	first := a.ExpiresAt()
	tx, err := e.fenced.BeginTx(a.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * lease) // a long handler: the lease would have run out three times
	if err := a.Context().Err(); err != nil {
		t.Fatalf("handler context cancelled during its transaction: %v", context.Cause(a.Context()))
	}
	if !a.ExpiresAt().After(first.Add(lease)) {
		t.Fatalf("lease not renewed during the transaction: expires %v, first %v", a.ExpiresAt(), first)
	}
	if _, err := tx.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'b'`); err != nil {
		t.Fatal(err)
	}
	if err := a.CompleteIn(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestValidOlderClaimOfAnotherJob: under global epochs, job 2's newer claim writes
// a row, then job 1's older, still valid claim writes it. stale: row fences job 1
// and says a newer claim wrote the row, never that job 1 was superseded; stale:
// claim lets it write.
func TestValidOlderClaimOfAnotherJob(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{testPolicy, staleClaimPolicy} {
		j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
		e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
		fenced := e.fencedWith(t, policy)
		ctx := context.Background()
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
		write := `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`
		if _, err := fenced.ExecContext(two.Context(), write); err != nil {
			t.Fatal(err)
		}
		_, err = fenced.ExecContext(one.Context(), write)
		if policy == staleClaimPolicy {
			if err != nil {
				t.Fatalf("stale: claim: job 1's valid claim was fenced: %v", err)
			}
			if got := e.query(t, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`); got != fmt.Sprintf("98:%d", one.Epoch) {
				t.Fatalf("inventory a = %s, want 98 stamped by job 1", got)
			}
			continue
		}
		fe := fencedErr(t, "job 1's write under stale: row", err)
		if strings.Contains(fe.Error(), "superseded") || !strings.Contains(fe.Error(), "claim is still current") {
			t.Fatalf("the fence of a valid claim must not call it superseded: %v", fe)
		}
		if err := one.Release(ctx, 0); err != nil {
			t.Fatalf("job 1's claim is valid; release: %v", err)
		}
	}
}

// The read-modify-write patterns. Fencing orders writers and stops superseded
// ones; between two live claims (stale: claim, or any two claims whose writes
// the row epoch does not order) it is no concurrency control.
func TestReadModifyWrite(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*env, *sql.DB, *claim.Lease, *claim.Lease) {
		j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
		e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
		fenced := e.fencedWith(t, staleClaimPolicy)
		one, err := j.Claim(context.Background(), e.db, int64(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(one.Stop)
		two, err := j.Claim(context.Background(), e.db, int64(2))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(two.Stop)
		return e, fenced, one, two
	}
	t.Run("unsafe read then write back", func(t *testing.T) {
		t.Parallel()
		e, fenced, one, two := setup(t)
		var q1, q2 int
		if err := fenced.QueryRowContext(one.Context(), `SELECT quantity FROM inventory WHERE sku = 'a'`).Scan(&q1); err != nil {
			t.Fatal(err)
		}
		if err := fenced.QueryRowContext(two.Context(), `SELECT quantity FROM inventory WHERE sku = 'a'`).Scan(&q2); err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			l *claim.Lease
			q int
		}{{one, q1 - 1}, {two, q2 - 1}} {
			if _, err := fenced.ExecContext(w.l.Context(), `UPDATE inventory SET quantity = $1 WHERE sku = 'a'`, w.q); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "99" {
			t.Fatalf("quantity %s; the unsafe pattern was expected to lose an update (99)", got)
		}
	})
	t.Run("safe relative update", func(t *testing.T) {
		t.Parallel()
		e, fenced, one, two := setup(t)
		for _, l := range []*claim.Lease{one, two} {
			if _, err := fenced.ExecContext(l.Context(), `UPDATE inventory SET quantity = quantity - $1 WHERE sku = 'a'`, 1); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "98" {
			t.Fatalf("quantity %s, want 98", got)
		}
	})
	t.Run("safe select for update", func(t *testing.T) {
		t.Parallel()
		e, fenced, one, two := setup(t)
		var wg sync.WaitGroup
		read := make(chan struct{})
		errs := make(chan error, 2)
		for i, l := range []*claim.Lease{one, two} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := l.Context()
				tx, err := fenced.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				defer tx.Rollback()
				if i == 1 {
					<-read // the second reads while the first holds the row
				}
				var q int
				if err := tx.QueryRowContext(ctx, `SELECT quantity FROM inventory WHERE sku = 'a' FOR UPDATE`).Scan(&q); err != nil {
					errs <- err
					return
				}
				if i == 0 {
					close(read)
					time.Sleep(100 * time.Millisecond)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE inventory SET quantity = $1 WHERE sku = 'a'`, q-1); err != nil {
					errs <- err
					return
				}
				errs <- tx.Commit()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "98" {
			t.Fatalf("quantity %s, want 98", got)
		}
	})
}

// TestExactAccountingUnderClaim: WithExactAccounting on claim-checked bulk writes
// (an UPDATE, a multi-row upsert). Under stale: row, a valid claim that writes two
// rows, one of them written by another job's newer claim, writes the other and
// reports one fenced — never calling the claim superseded. Under stale: claim both rows are written. A superseded claim's bulk
// write writes nothing and says superseded, counts or not.
func TestExactAccountingUnderClaim(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{testPolicy, staleClaimPolicy} {
		j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
		e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES; INSERT INTO jobs DEFAULT VALUES`)
		fenced := e.fencedWith(t, policy)
		ctx := context.Background()
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
		if _, err := fenced.ExecContext(two.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'b'`); err != nil {
			t.Fatal(err)
		}
		for _, bulk := range []string{
			`UPDATE inventory SET quantity = quantity - 1`,
			`INSERT INTO inventory (sku, quantity) VALUES ('c', 7), ('b', 7) ON CONFLICT (sku) DO UPDATE SET quantity = excluded.quantity`,
		} {
			// context.WithoutCancel: a fence cancels the lease's context, as it
			// cancels a handler's.
			res, err := fenced.ExecContext(sqlfence.WithExactAccounting(context.WithoutCancel(one.Context())), bulk)
			if policy == staleClaimPolicy {
				if err != nil {
					t.Fatalf("stale: claim: job 1's valid claim was fenced: %s: %v", bulk, err)
				}
				if n, _ := res.RowsAffected(); n != 2 {
					t.Fatalf("stale: claim: %s: %d rows written, want 2", bulk, n)
				}
				continue
			}
			fe := fencedErr(t, "stale: row, exact accounting: "+bulk, err)
			if fe.Affected != 1 || fe.Fenced != 1 || fe.StoredEpoch != two.Epoch || strings.Contains(fe.Error(), "superseded") {
				t.Fatalf("stale: row: %s: want 1 written, 1 fenced by epoch %d, not called superseded: affected %d fenced %d stored %d: %v",
					bulk, two.Epoch, fe.Affected, fe.Fenced, fe.StoredEpoch, fe)
			}
			if !strings.Contains(fe.Error(), "still current") {
				t.Errorf("stale: row: %s: the fence of a valid claim should say the claim is still current: %v", bulk, fe)
			}
		}

		// Job 1 superseded: its bulk write writes nothing and says so.
		e.expire(t, 1)
		again, err := j.Claim(ctx, e.db, int64(1))
		if err != nil {
			t.Fatal(err)
		}
		defer again.Stop()
		before := e.query(t, `SELECT string_agg(sku || ':' || quantity, ' ' ORDER BY sku) FROM inventory`)
		_, err = fenced.ExecContext(sqlfence.WithExactAccounting(context.WithoutCancel(one.Context())), `UPDATE inventory SET quantity = quantity - 1`)
		if fe := fencedErr(t, "superseded, exact accounting", err); !strings.Contains(fe.Error(), "superseded") || fe.StoredEpoch != again.Epoch {
			t.Fatalf("superseded bulk write: %v", fe)
		}
		if after := e.query(t, `SELECT string_agg(sku || ':' || quantity, ' ' ORDER BY sku) FROM inventory`); after != before {
			t.Fatalf("superseded bulk write changed inventory: %s -> %s", before, after)
		}
	}
}

// TestClaimTableElsewhere: the claim check reads the claim row in the write's own
// statement, so the claim table must be in the database of the protected tables. A
// write under a claim made on another database fails, writes nothing, and says why
// and what to do — it is not a fence.
func TestClaimTableElsewhere(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	queue := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	business := newEnv(t)
	l, err := j.Claim(context.Background(), queue.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	_, err = business.fenced.ExecContext(l.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`)
	var pgErr *pgconn.PgError
	if err == nil || errors.Is(err, sqlfence.ErrFenced) || !errors.As(err, &pgErr) || pgErr.Code != "42P01" ||
		!strings.Contains(err.Error(), "claim table jobs, which this database does not have") || !strings.Contains(err.Error(), "claim.Ledger") ||
		!strings.Contains(err.Error(), fmt.Sprintf("epoch %d", l.Epoch)) {
		t.Fatalf("write under a claim from another database: %v", err)
	}
	if got := business.query(t, `SELECT quantity || ':' || writer_epoch FROM inventory WHERE sku = 'a'`); got != "100:0" {
		t.Fatalf("inventory a = %s: the write landed", got)
	}
}

// TestTakeoverWait: with JobsConfig.TakeoverWait, Claim waits for the old claim's
// open transaction instead of reporting the job locked at once: it claims as soon as
// that transaction commits, after its writes; and while it stays open, Claim
// reports Locked once the wait is over.
func TestTakeoverWait(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: -1})
	waiting := newJobs(t, claim.JobsConfig{RenewEvery: -1, TakeoverWait: 5 * time.Second})
	brief := newJobs(t, claim.JobsConfig{RenewEvery: -1, TakeoverWait: 200 * time.Millisecond})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	ctx := context.Background()
	a, err := j.Claim(ctx, e.db, int64(1))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	tx, err := e.fenced.BeginTx(a.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(a.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	e.expire(t, 1)

	// On the plain arbiter and through sqlfence (the statement sets lock_timeout).
	for _, db := range []claim.DB{e.db, mark(t, e.fenced)} {
		start := time.Now()
		_, err = brief.Claim(ctx, db, int64(1))
		var nc *claim.NotClaimableError
		if !errors.As(err, &nc) || !nc.Locked {
			t.Fatalf("takeover with a 200ms wait during A's open transaction: err = %v, want NotClaimableError.Locked", err)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 3*time.Second {
			t.Errorf("the 200ms takeover wait took %v", d)
		}
	}

	type result struct {
		l   *claim.Lease
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	conn, err := e.raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		l, err := waiting.Claim(ctx, mark(t, conn), int64(1))
		done <- result{l, err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	committed := time.Now()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("waiting takeover: %v", r.err)
	}
	defer r.l.Stop()
	if r.at.Before(committed) {
		t.Fatalf("the takeover returned before A's transaction committed")
	}
	if got := e.query(t, `SELECT quantity FROM inventory WHERE sku = 'a'`); got != "99" {
		t.Fatalf("quantity %s, want A's committed 99", got)
	}
	// The lock_timeout was local to the claim's own statement: the session has none.
	var lt string
	if err := conn.QueryRowContext(ctx, `SHOW lock_timeout`).Scan(&lt); err != nil || lt != "0" {
		t.Errorf("lock_timeout on the claim's session after the claim: %q, %v", lt, err)
	}
	// A stays fenced.
	if _, err := e.fenced.ExecContext(context.WithoutCancel(a.Context()), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'a'`); !errors.Is(err, sqlfence.ErrFenced) {
		t.Fatalf("A's write after the takeover: %v, want ErrFenced", err)
	}
}
