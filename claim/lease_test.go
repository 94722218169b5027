package claim_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/claim"
)

// TestParentCancel: cancelling the context given to the claim (a worker
// shutting down) stops the handler and the keeper, with the parent's cause.
func TestParentCancel(t *testing.T) {
	t.Parallel()
	j := newJobs(t, claim.JobsConfig{RenewEvery: 10 * time.Millisecond})
	e := newEnv(t, j.Schema(), `INSERT INTO jobs DEFAULT VALUES`)
	parent, cancel := context.WithCancelCause(context.Background())
	l, err := j.ClaimNext(parent, e.db)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Stop()
	shutdown := errors.New("worker shutting down")
	cancel(shutdown)
	<-l.Context().Done()
	if cause := context.Cause(l.Context()); cause != shutdown {
		t.Fatalf("cause = %v, want the parent's", cause)
	}
	// The job is still claimed: releasing it hands it on at once.
	if err := l.Release(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// TestNoGoroutineLeak ends leases every way there is — completion, release,
// Stop, a fence, a cancelled parent — and checks that no keeper goroutine
// outlives its lease.
func TestNoGoroutineLeak(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	j := newJobs(t, claim.JobsConfig{RenewEvery: 5 * time.Millisecond, Lease: time.Minute})
	lg := newLedger(t, claim.LedgerConfig{RenewEvery: 5 * time.Millisecond, Lease: time.Minute})
	e := newEnv(t, j.Schema(), lg.Schema(), `INSERT INTO jobs SELECT FROM generate_series(1, 100)`)
	e.raw.SetMaxIdleConns(4)
	e.fenced.SetMaxIdleConns(4)
	ctx := context.Background()
	run := func(i int) {
		var (
			l   *claim.Lease
			err error
		)
		if i%2 == 0 {
			l, err = j.ClaimNext(ctx, e.db)
		} else {
			l, err = lg.Claim(ctx, e.db, "m"+strings.Repeat("x", i))
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(7 * time.Millisecond) // let the keeper renew once
		switch i % 5 {
		case 0:
			err = l.Complete(ctx)
		case 1:
			err = l.Release(ctx, 0)
		case 2:
			l.Stop()
		case 3:
			// A fenced write ends the handler; the worker then stops the lease.
			e.exec(t, `UPDATE inventory SET writer_epoch = 1e12 WHERE sku = 'a'`)
			_, err = e.fenced.ExecContext(l.Context(), `UPDATE inventory SET quantity = 0 WHERE sku = 'a'`)
			if !errors.Is(err, sqlfence.ErrFenced) {
				t.Fatalf("err = %v, want ErrFenced", err)
			}
			err = nil
			<-l.Context().Done()
			l.Stop()
		case 4:
			pctx, cancel := context.WithCancel(ctx)
			l2, err2 := j.ClaimNext(pctx, e.db)
			if err2 != nil {
				t.Fatal(err2)
			}
			cancel()
			<-l2.Context().Done()
			l.Stop()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	run(0) // warm up connection pools
	settle := func() int {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	base := settle()
	for i := 1; i < 60; i++ {
		run(i)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := settle()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before the leases:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	}
}
