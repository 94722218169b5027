package sqlfence_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sqlfence/sqlfence"
)

// mustPanic runs f and returns what it panicked with, failing the test when it did not.
func mustPanic(t *testing.T, what string, f func()) string {
	t.Helper()
	var got any
	func() {
		defer func() { got = recover() }()
		f()
	}()
	if got == nil {
		t.Fatalf("%s: no panic", what)
	}
	return fmt.Sprint(got)
}

// TestPolicyFailsClosed: a Policy changed after parsing never leaves a write unfenced.
// The connector fences with its own checked copy, taken at NewConnector; a policy that
// did not come from the parser cannot fence a connector at all.
func TestPolicyFailsClosed(t *testing.T) {
	open := func(p *sqlfence.Policy) (*sql.DB, *recorder) {
		r := newRecorder()
		db := sql.OpenDB(sqlfence.NewConnector(&fullConnector{r: r}, p))
		t.Cleanup(func() { db.Close() })
		return db, r
	}
	const write = "UPDATE audit SET sku = $1"

	t.Run("appended before NewConnector is protected", func(t *testing.T) {
		p := mockPolicy(t)
		p.Tables = append(p.Tables, sqlfence.Table{QualifiedName: sqlfence.QualifiedName{Name: "audit"}})
		db, r := open(p)
		if _, err := db.ExecContext(context.Background(), write, "x"); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("no epoch: got %v, want ErrUnfenced", err)
		}
		if _, err := db.ExecContext(epoch(7), write, "x"); err != nil {
			t.Fatal(err)
		}
		wantCalls(t, r.statements(), rec{op: "exec", query: "/*sqlfence fenced: audit*/ UPDATE audit SET sku = $1, writer_epoch = $2::bigint WHERE audit.writer_epoch OPERATOR(pg_catalog.<) $2::bigint",
			args: []driver.NamedValue{nv(1, "x"), nv(2, int64(7))}})
		if plan := p.Plan(write); len(plan.Tables) != 1 || plan.Fenced == "" {
			t.Fatalf("Plan after the append: %+v", plan)
		}
	})

	t.Run("changed after NewConnector changes nothing", func(t *testing.T) {
		p := mockPolicy(t)
		db, _ := open(p)
		for i := range p.Tables {
			p.Tables[i].Name = "renamed"
		}
		p.Tables = nil
		p.Enforce = sqlfence.EnforceShadow
		if _, err := db.ExecContext(context.Background(), "DELETE FROM inventory"); !errors.Is(err, sqlfence.ErrUnfenced) {
			t.Fatalf("got %v, want ErrUnfenced from the connector's own copy", err)
		}
	})

	for name, change := range map[string]func(p *sqlfence.Policy){
		"duplicate table": func(p *sqlfence.Policy) { p.Tables = append(p.Tables, p.Tables[0]) },
		"no tables":       func(p *sqlfence.Policy) { p.Tables = nil },
		"bad mode":        func(p *sqlfence.Policy) { p.Tables[0].Mode = 9 },
		"unnamed table":   func(p *sqlfence.Policy) { p.Tables = append(p.Tables, sqlfence.Table{}) },
		"bad enforce":     func(p *sqlfence.Policy) { p.Enforce = 0 },
		"claim protected": func(p *sqlfence.Policy) {
			p.Claims = append(p.Claims, sqlfence.ClaimTable{QualifiedName: p.Tables[0].QualifiedName})
		},
	} {
		t.Run("rejected: "+name, func(t *testing.T) {
			p := mockPolicy(t)
			change(p)
			msg := mustPanic(t, "NewConnector", func() { sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p) })
			if !strings.Contains(msg, "changed after parsing") {
				t.Fatalf("panic %q does not say the policy was changed", msg)
			}
			if plan := p.Plan("DELETE FROM inventory"); plan.Err == nil {
				t.Fatal("Plan accepted the broken policy")
			}
		})
	}

	t.Run("struct literal", func(t *testing.T) {
		p := &sqlfence.Policy{EpochColumn: "writer_epoch", Mode: sqlfence.ModeStrict, Enforce: sqlfence.EnforceOn,
			Tables: []sqlfence.Table{{QualifiedName: sqlfence.QualifiedName{Name: "inventory"}}}}
		msg := mustPanic(t, "NewConnector", func() { sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p) })
		if !strings.Contains(msg, "ParsePolicy") {
			t.Fatalf("panic %q does not say how to build a policy", msg)
		}
		if plan := p.Plan("DELETE FROM inventory"); plan.Err == nil {
			t.Fatal("Plan accepted a struct literal")
		}
	})

	t.Run("nil", func(t *testing.T) {
		mustPanic(t, "nil policy", func() { sqlfence.NewConnector(&fullConnector{r: newRecorder()}, nil) })
		mustPanic(t, "nil inner", func() { sqlfence.NewConnector(nil, mockPolicy(t)) })
		mustPanic(t, "nil option", func() { sqlfence.NewConnector(&fullConnector{r: newRecorder()}, mockPolicy(t), nil) })
	})
}

// TestConnectorOptions: the logger gets every line the connector logs, and the cache
// bounds are the ones given.
func TestConnectorOptions(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nenforce: shadow\nresolve: none\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	c := sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p, sqlfence.WithLogger(logger), sqlfence.WithCacheLimits(100, 1<<20))
	db := sql.OpenDB(c)
	defer db.Close()
	if _, err := db.ExecContext(context.Background(), "TRUNCATE inventory"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "sqlfence shadow") || !strings.Contains(buf.String(), "TRUNCATE") {
		t.Fatalf("the shadow report did not reach the given logger: %q", buf.String())
	}
	st, ok := sqlfence.CacheStatsOf(c)
	if !ok || st.MaxEntries != 100 || st.MaxBytes != 1<<20 {
		t.Fatalf("cache bounds: %+v", st)
	}

	off := sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p, sqlfence.WithCacheLimits(0, 0))
	db2 := sql.OpenDB(off)
	defer db2.Close()
	for range 3 {
		if _, err := db2.ExecContext(epoch(3), "DELETE FROM inventory"); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := sqlfence.CacheStatsOf(off); st.Hits != 0 || st.Entries != 0 {
		t.Fatalf("a disabled cache cached: %+v", st)
	}
	msg := mustPanic(t, "negative limits", func() { sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p, sqlfence.WithCacheLimits(-1, 0)) })
	if !strings.Contains(msg, "negative") {
		t.Fatalf("panic %q", msg)
	}
}
