package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shared is the cluster of this test binary, started by the first test that
// needs it so that binaries whose tests all skip never pay for it.
var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// inMain records that Main is running and will therefore stop the shared
// cluster; without it a cluster would outlive its tests' data directory.
var inMain atomic.Bool

// Main runs the tests and then stops the shared cluster, if one was started.
// Use it as
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	inMain.Store(true)
	code := m.Run()
	// Settle the once so that a straggling goroutine cannot start a cluster
	// nobody would stop.
	shared.once.Do(func() { shared.err = errors.New("pgtest: tests have finished") })
	if shared.cluster != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// AdminDSN returns a superuser DSN for the server tests should use: the one
// in SQLFENCE_TEST_DSN, or else this binary's throwaway cluster. Without a
// server the test is skipped, except under CI, where a silently skipped
// database test would hide a broken setup, so it fails instead.
func AdminDSN(tb testing.TB) string {
	tb.Helper()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	if !inMain.Load() {
		tb.Fatal("pgtest: add func TestMain(m *testing.M) { pgtest.Main(m) } to this package's tests so the throwaway cluster gets stopped")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cluster, shared.err = Start(ctx)
	})
	if err := shared.err; err != nil {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			tb.Fatalf("%v (CI is set, so not skipping)", err)
		}
		if errors.Is(err, ErrNoServer) {
			tb.Skipf("%v", err) // it says what to install or set
		}
		tb.Skipf("%v\n(set %s to use an existing server instead)", err, EnvDSN)
	}
	return shared.cluster.DSN()
}

// NewDB returns a DSN for a new empty database that is dropped when the test
// ends, so tests can run in parallel without seeing each other's objects.
func NewDB(tb testing.TB) string {
	tb.Helper()
	admin := AdminDSN(tb)
	ctx, cancel := context.WithTimeout(tb.Context(), time.Minute)
	defer cancel()
	dsn, drop, err := CreateDatabase(ctx, admin)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			tb.Error(err)
		}
	})
	return dsn
}
