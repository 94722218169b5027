package pgxfence_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/pgcluster"
	"github.com/sqlfence/sqlfence/pgxfence"
)

// TestProbeFreshPoolRefusesOldPrimary: a fresh pgxfence pool on a multi-host DSN
// that lists the old primary first (restarted without a rewind, a primary on timeline
// 1, while the promoted standby writes on timeline 2) reads the promoted host before
// its first session and refuses the old primary's with SF707. Under CI=true a machine
// without the server binaries fails the test.
func TestProbeFreshPoolRefusesOldPrimary(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	rs, err := pgcluster.StartReplicaSet(ctx, pgcluster.ReplicaOptions{Standbys: 1})
	if errors.Is(err, pgcluster.ErrNoServer) && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Stop)
	old, promoted := rs.Nodes()[0], rs.Nodes()[1]
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := promoted.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := old.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if pos, err := old.Position(ctx); err != nil || pos.Standby || pos.Timeline != 1 {
		t.Fatalf("the old primary at %v (%v), want a primary on timeline 1", pos, err)
	}
	pol, err := sqlfence.ParsePolicy([]byte("version: 1\nresolve: none\ntables: [inventory]\n"), "probe")
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, dsn string) *pgxfence.Pool {
		t.Helper()
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		fp, err := pgxfence.New(pool, pol)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	dsn := rs.MultiHostDSN("postgres") // the old primary first
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = open(t, dsn).Exec(sctx, `SELECT 1`)
	var fe *sqlfence.Error
	promotedAddr := "127.0.0.1:" + strconv.Itoa(promoted.Port())
	if !errors.As(err, &fe) || fe.Code != "SF707" || !errors.Is(err, sqlfence.ErrRefused) ||
		!strings.Contains(err.Error(), "primary on timeline 1") || !strings.Contains(err.Error(), "behind timeline 2") || !strings.Contains(err.Error(), promotedAddr) {
		t.Fatalf("a fresh pool's first statement on the old primary: %v, want SF707 naming timeline 2 and %s", err, promotedAddr)
	}
	t.Log(err)
	// One host: nothing to compare with (the documented limit).
	if _, err := open(t, old.DSN("postgres")).Exec(sctx, `SELECT 1`); err != nil {
		t.Fatalf("a single-host pool on the old primary: %v", err)
	}
}
