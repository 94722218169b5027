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
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// eventLog collects the events an observer is given.
type eventLog struct {
	mu     sync.Mutex
	events []sqlfence.Event
}

func (l *eventLog) observe(_ context.Context, e sqlfence.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

// take returns the events since the last take, as "outcome code table" strings.
func (l *eventLog) take() ([]string, []sqlfence.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.events
	l.events = nil
	var s []string
	for _, e := range evs {
		s = append(s, strings.TrimSpace(fmt.Sprintf("%s %s %s", e.Outcome, e.Code, e.Table)))
	}
	return s, evs
}

// openObserved opens the policy's connector over a fresh database with the options.
func openObserved(t *testing.T, policy string, opts ...sqlfence.ConnectorOption) (db, raw *sql.DB, c driver.Connector) {
	t.Helper()
	dsn, raw := newRawDB(t, schema)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.ParsePolicy([]byte(policy), "")
	if err != nil {
		t.Fatal(err)
	}
	c = sqlfence.NewConnector(stdlib.GetConnector(*cfg), p, opts...)
	db = sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db, raw, c
}

const observedPolicy = "version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n"

// TestObserver: every decision and every check of a fenced write reaches the observer,
// against PostgreSQL, with the rule code, the table, the epoch and the check's latency.
func TestObserver(t *testing.T) {
	var l eventLog
	db, _, _ := openObserved(t, observedPolicy, sqlfence.WithObserver(l.observe))
	ctx := context.Background()
	at := func(e int64) context.Context { return sqlfence.WithEpoch(ctx, e) }
	steps := []struct {
		name string
		run  func() error
		want []string
	}{
		{"read", func() error { _, err := db.ExecContext(ctx, `SELECT 1`); return err }, []string{"pass"}},
		{"fresh write", func() error {
			_, err := db.ExecContext(at(7), `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`)
			return err
		}, []string{"fence  inventory"}},
		{"stale write", func() error {
			_, err := db.ExecContext(at(3), `UPDATE inventory SET quantity = 2 WHERE sku = 'a'`)
			return err
		}, []string{"fence  inventory", "checked SF101 inventory"}},
		{"same epoch, strict", func() error {
			_, err := db.ExecContext(at(7), `UPDATE inventory SET quantity = 3 WHERE sku = 'a'`)
			return err
		}, []string{"fence  inventory", "checked SF110 inventory"}},
		{"no row matches", func() error {
			_, err := db.ExecContext(at(8), `DELETE FROM inventory WHERE sku = 'zzz'`)
			return err
		}, []string{"fence  inventory", "checked  inventory"}},
		{"no epoch", func() error {
			_, err := db.ExecContext(ctx, `DELETE FROM inventory`)
			return err
		}, []string{"unfenced SF201 inventory"}},
		{"refused", func() error { _, err := db.ExecContext(at(8), `TRUNCATE inventory`); return err }, []string{"refuse SF301 inventory"}},
		{"refused prepare", func() error {
			_, err := db.PrepareContext(at(8), `INSERT INTO inventory VALUES ('z', 1)`)
			return err
		}, []string{"refuse SF304 inventory"}},
		{"named argument", func() error {
			_, err := db.ExecContext(at(8), `UPDATE inventory SET quantity = $1`, pgx.NamedArgs{"q": 1})
			return err
		}, []string{"refuse SF701"}},
	}
	for _, s := range steps {
		err := s.run()
		got, evs := l.take()
		if strings.Join(got, "|") != strings.Join(s.want, "|") {
			t.Errorf("%s: events %q, want %q (err %v)", s.name, got, s.want, err)
			continue
		}
		last := evs[len(evs)-1]
		if last.Shadow {
			t.Errorf("%s: an event under enforce: on says shadow", s.name)
		}
		switch {
		case last.Outcome == sqlfence.OutcomeChecked:
			if last.Duration <= 0 || last.Epoch == 0 || last.Statement == "" {
				t.Errorf("%s: check event %+v: want its latency, epoch and statement", s.name, last)
			}
			if !errors.Is(err, last.Err) && (err != nil || last.Err != nil) {
				t.Errorf("%s: check event's error %v, the statement's %v", s.name, last.Err, err)
			}
		case last.Code != "":
			if last.Err == nil || !errors.Is(err, last.Err) {
				t.Errorf("%s: event's error %v, the statement's %v", s.name, last.Err, err)
			}
		case err != nil:
			t.Errorf("%s: %v", s.name, err)
		}
	}
}

// TestShadowReport: under enforce: shadow every statement is sent as written, and the
// connector counts what enforcement would have done, per rule and per statement
// shape; each failing shape is logged once, and the summary through the connector's
// logger.
func TestShadowReport(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	db, raw, c := openObserved(t, observedPolicy+"enforce: shadow\n", sqlfence.WithLogger(logger), sqlfence.WithShadowSummary(time.Nanosecond))
	ctx := context.Background()
	stmts := []struct {
		ctx context.Context
		sql string
	}{
		{ctx, `SELECT count(*) FROM inventory`},
		{ctx, `UPDATE inventory SET quantity = 1 WHERE sku = 'a' /* first */`},
		{ctx, `UPDATE inventory SET quantity = 2 WHERE sku = 'b' -- the same shape`},
		{sqlfence.WithEpoch(ctx, 9), `UPDATE inventory SET quantity = 3 WHERE sku = 'a'`},
		{ctx, `TRUNCATE staging, inventory`},
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(s.ctx, s.sql); err != nil {
			t.Fatalf("shadow mode sends %s: %v", s.sql, err)
		}
	}
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM inventory`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("shadow mode ran the TRUNCATE as written: %d rows (%v)", n, err)
	}
	r, ok := sqlfence.ShadowReportOf(c)
	if !ok {
		t.Fatal("ShadowReportOf: not a shadow connector")
	}
	if r.Statements != 5 || r.Fence != 1 || r.Refuse != 1 || r.Unfenced != 2 || r.LetThrough != 0 || r.OtherShapes != 0 || r.Since.IsZero() {
		t.Errorf("report counts %+v", r)
	}
	rules := fmt.Sprint(r.Rules)
	if want := fmt.Sprint([]sqlfence.RuleCount{{Code: "SF201", Outcome: sqlfence.OutcomeUnfenced, Count: 2}, {Code: "SF301", Outcome: sqlfence.OutcomeRefuse, Count: 1}}); rules != want {
		t.Errorf("rules %s, want %s", rules, want)
	}
	if len(r.Shapes) != 3 {
		t.Fatalf("shapes %+v, want 3: the two unfenced updates are one shape", r.Shapes)
	}
	top := r.Shapes[0]
	if top.Count != 2 || top.Outcome != sqlfence.OutcomeUnfenced || top.Code != "SF201" || top.Table != "inventory" || !strings.Contains(top.Example, "/* first */") || top.Shape == "" {
		t.Errorf("top shape %+v", top)
	}
	for _, s := range r.Shapes[1:] {
		if s.Count != 1 || s.Shape == top.Shape && s.Outcome == top.Outcome {
			t.Errorf("shape %+v", s)
		}
	}

	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, "sqlfence shadow: would fail"); n != 2 {
		t.Errorf("%d lines say a shape would fail, want one per failing shape (2):\n%s", n, out)
	}
	for _, want := range []string{"code=SF201", "code=SF301", "sqlfence shadow: summary", "would_refuse=1", "would_fail_unfenced=2", "would_fence=1", "rules=\"SF201=2 SF301=1\""} {
		if !strings.Contains(out, want) {
			t.Errorf("the log does not say %s:\n%s", want, out)
		}
	}

	on, _, onConn := openObserved(t, observedPolicy)
	defer on.Close()
	if _, ok := sqlfence.ShadowReportOf(onConn); ok {
		t.Error("ShadowReportOf answers for a connector under enforce: on")
	}
}

// TestShadowShapesBounded: a program that builds a new statement per call cannot grow
// the shadow tally: past 200 shapes, executions are counted as other shapes.
func TestShadowShapesBounded(t *testing.T) {
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nenforce: shadow\nresolve: none\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	c := sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p, sqlfence.WithLogger(slog.New(slog.DiscardHandler)))
	db := sql.OpenDB(c)
	defer db.Close()
	for i := range 300 {
		if _, err := db.Exec(fmt.Sprintf("DELETE FROM inventory WHERE c%d = 1", i)); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := sqlfence.ShadowReportOf(c)
	if len(r.Shapes) != 200 || r.OtherShapes != 100 || r.Unfenced != 300 {
		t.Fatalf("%d shapes, %d other, %d unfenced; want 200, 100, 300", len(r.Shapes), r.OtherShapes, r.Unfenced)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestObserverSessionSettings: a session that would read text differently from
// sqlfence (here a database default turning standard_conforming_strings off) is
// refused at connect, under enforce: shadow too, and the observer is told so.
func TestObserverSessionSettings(t *testing.T) {
	var l eventLog
	dsn, raw := newRawDB(t, schema)
	var name string
	if err := raw.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`ALTER DATABASE ` + pgx.Identifier{name}.Sanitize() + ` SET standard_conforming_strings = off`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.ParsePolicy([]byte(observedPolicy+"enforce: shadow\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), p, sqlfence.WithObserver(l.observe),
		sqlfence.WithLogger(slog.New(slog.DiscardHandler))))
	defer db.Close()
	_, err = db.Exec(`SELECT 1`)
	got, evs := l.take()
	if !errors.Is(err, sqlfence.ErrRefused) || len(got) == 0 || got[0] != "refuse SF704" || evs[0].Shadow {
		t.Fatalf("err %v, events %q (%+v); want ErrRefused and a refuse SF704 event that is not shadow", err, got, evs)
	}
}

// TestShadowConcurrent: the tally counts every statement when connections run at once,
// and summaries are logged while they do (run it with -race).
func TestShadowConcurrent(t *testing.T) {
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nenforce: shadow\nresolve: none\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, nil))
	var l eventLog
	c := sqlfence.NewConnector(&fullConnector{r: newRecorder()}, p, sqlfence.WithLogger(logger),
		sqlfence.WithShadowSummary(time.Nanosecond), sqlfence.WithObserver(l.observe))
	db := sql.OpenDB(c)
	defer db.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				q := fmt.Sprintf("DELETE FROM inventory WHERE sku = 'g%d-%d'", g, i)
				if _, err := db.Exec(q); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	r, _ := sqlfence.ShadowReportOf(c)
	if r.Unfenced != 400 || len(r.Shapes) != 1 || r.Shapes[0].Count != 400 {
		t.Fatalf("%d unfenced in %d shapes, want 400 in one: %+v", r.Unfenced, len(r.Shapes), r.Shapes)
	}
	if got, _ := l.take(); len(got) != 400 {
		t.Fatalf("%d events, want 400", len(got))
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(buf.String(), "would fail"); n != 1 {
		t.Errorf("%d lines say the shape would fail, want 1", n)
	}
	if !strings.Contains(buf.String(), "sqlfence shadow: summary") {
		t.Error("no summary was logged")
	}
}
