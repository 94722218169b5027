package claim_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

// exampleTB lets the runnable examples below take a fresh database from the
// test binary's throwaway cluster (which pgtest.Main stops), as the tests do.
// An example has no *testing.T, and a failure in setup is a panic.
type exampleTB struct {
	testing.TB // unset: only the methods below are called
	cleanups   []func()
}

func (e *exampleTB) Helper()                           {}
func (e *exampleTB) Context() context.Context          { return context.Background() }
func (e *exampleTB) Cleanup(f func())                  { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (e *exampleTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleTB) Error(args ...any)                 { panic(fmt.Sprint(args...)) }
func (e *exampleTB) Skip(args ...any)                  { panic(fmt.Sprint(args...)) }
func (e *exampleTB) Skipf(format string, args ...any)  { panic(fmt.Sprintf(format, args...)) }

// exampleDBs returns a fresh database as the arbiter (plain pgx) and through
// sqlfence with policy, and a function that drops it.
func exampleDBs(policy string, ddl ...string) (arbiter, fenced *sql.DB, done func()) {
	tb := &exampleTB{}
	dsn := pgtest.NewDB(tb)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		panic(err)
	}
	arbiter = stdlib.OpenDB(*cfg)
	for _, s := range ddl {
		if _, err := arbiter.Exec(s); err != nil {
			panic(err)
		}
	}
	// The example databases have no guard (sqlfence guard --apply): the catalog is
	// read again at most every second instead.
	pol, err := sqlfence.ParsePolicy([]byte(policy+"catalog_refresh: 1s\n"), "example")
	if err != nil {
		panic(err)
	}
	fenced = sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), pol))
	return arbiter, fenced, func() {
		fenced.Close()
		arbiter.Close()
		for i := len(tb.cleanups) - 1; i >= 0; i-- {
			tb.cleanups[i]()
		}
	}
}

// A worker claims the next job, writes through sqlfence under the lease's
// context, and completes. Epochs carry the arbiter's WAL timeline above bit 32, so
// that a promoted standby draws above every epoch of the old primary: the first
// claim on a new cluster (timeline 1) is 1<<32 + 1.
func ExampleJobs_ClaimNext() {
	jobs, err := claim.NewJobs(claim.JobsConfig{Returning: []string{"sku"}})
	if err != nil {
		panic(err)
	}
	arbiter, db, done := exampleDBs("version: 1\ntables: [inventory]\nclaims: [{table: jobs}]\n",
		jobs.Schema(),
		`ALTER TABLE jobs ADD COLUMN sku text NOT NULL`,
		`INSERT INTO jobs (sku) VALUES ('apple')`,
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory VALUES ('apple', 10, 0)`)
	defer done()
	ctx := context.Background()

	// The claim runs on the arbiter: here the database through sqlfence, whose
	// policy lets only the claim helpers write jobs.status and lease_epoch.
	var sku string
	lease, err := jobs.ClaimNext(ctx, db, &sku)
	if err != nil {
		panic(err)
	}
	defer lease.Stop()
	fmt.Printf("claimed job %v at epoch %d\n", lease.JobID, lease.Epoch)

	// The handler: every protected write carries the lease's epoch.
	_, err = db.ExecContext(lease.Context(), `UPDATE inventory SET quantity = quantity - 1 WHERE sku = $1`, sku)
	if err != nil {
		panic(err)
	}
	if err := lease.Complete(ctx); err != nil {
		panic(err)
	}
	var q, e int
	arbiter.QueryRow(`SELECT quantity, writer_epoch FROM inventory`).Scan(&q, &e)
	fmt.Printf("%s: %d left, written at epoch %d\n", sku, q, e)
	_, err = jobs.ClaimNext(ctx, db, &sku)
	fmt.Println(err)
	// Output:
	// claimed job 1 at epoch 4294967297
	// apple: 9 left, written at epoch 4294967297
	// claim [SF614]: no job to claim
}

// A worker paused past its lease (here: a lease of 50ms and no keeper) is
// replaced; when it wakes it can neither write what its successor wrote nor
// complete the job, and its context says why.
func ExampleLease_Context() {
	jobs, err := claim.NewJobs(claim.JobsConfig{Lease: 50 * time.Millisecond, RenewEvery: -1})
	if err != nil {
		panic(err)
	}
	arbiter, db, done := exampleDBs("version: 1\ntables: [inventory]\n",
		jobs.Schema(),
		`INSERT INTO jobs DEFAULT VALUES`,
		`CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO inventory VALUES ('apple', 10, 0)`)
	defer done()
	ctx := context.Background()
	const write = `UPDATE inventory SET quantity = quantity - 1 WHERE sku = 'apple'`

	stale, _ := jobs.ClaimNext(ctx, arbiter)
	defer stale.Stop()
	time.Sleep(100 * time.Millisecond) // paused past the lease
	next, _ := jobs.ClaimNext(ctx, arbiter)
	defer next.Stop()
	fmt.Printf("job %v: epoch %d, then epoch %d\n", next.JobID, stale.Epoch, next.Epoch)
	if _, err := db.ExecContext(next.Context(), write); err != nil {
		panic(err)
	}

	_, err = db.ExecContext(stale.Context(), write)
	fmt.Println("stale write fenced:", errors.Is(err, sqlfence.ErrFenced))
	<-stale.Context().Done()
	fmt.Println("stale handler stopped, cause fenced:", errors.Is(context.Cause(stale.Context()), sqlfence.ErrFenced))
	// Later statements on the cancelled context fail with context.Canceled;
	// Lease.Err adds the cause.
	_, err = db.ExecContext(stale.Context(), `SELECT 1`)
	fmt.Println("next statement:", errors.Is(err, context.Canceled), "fenced, with Lease.Err:", errors.Is(stale.Err(err), sqlfence.ErrFenced))
	err = stale.Complete(ctx)
	var fe *sqlfence.Error
	errors.As(err, &fe)
	fmt.Printf("stale completion fenced: %v [%s] (own epoch %d, stored %d)\n", errors.Is(err, sqlfence.ErrFenced), fe.Code, fe.Epoch, fe.StoredEpoch)
	fmt.Println("successor completes:", next.Complete(ctx))
	// Output:
	// job 1: epoch 4294967297, then epoch 4294967298
	// stale write fenced: true
	// stale handler stopped, cause fenced: true
	// next statement: true fenced, with Lease.Err: true
	// stale completion fenced: true [SF102] (own epoch 4294967297, stored 4294967298)
	// successor completes: <nil>
}

// A queue that hands out opaque receipts, such as SQS, delivers a message
// twice. The claim table orders the deliveries: the second is refused while
// the first holds the job, and after completion a redelivery is
// acknowledged, not run again.
func ExampleLedger() {
	ledger, err := claim.NewLedger(claim.LedgerConfig{Lease: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	arbiter, _, done := exampleDBs("version: 1\ntables: [inventory]\n", ledger.Schema())
	defer done()
	ctx := context.Background()

	first, err := ledger.Claim(ctx, arbiter, "order-1042")
	if err != nil {
		panic(err)
	}
	defer first.Stop()
	fmt.Println("first delivery: epoch", first.Epoch)

	_, err = ledger.Claim(ctx, arbiter, "order-1042")
	fmt.Println("second delivery while held:", errors.Is(err, claim.ErrNotClaimable), errors.Is(err, claim.ErrDone))

	if err := first.Complete(ctx); err != nil {
		panic(err)
	}
	_, err = ledger.Claim(ctx, arbiter, "order-1042")
	if errors.Is(err, claim.ErrDone) {
		fmt.Println("redelivery after completion: acknowledge the message")
	}
	// Output:
	// first delivery: epoch 4294967297
	// second delivery while held: true false
	// redelivery after completion: acknowledge the message
}
