package sqlfenceotel_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/XSAM/otelsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqlfence/sqlfence"
	sqlfenceotel "github.com/sqlfence/sqlfence/contrib/otel"
	"github.com/sqlfence/sqlfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const schema = `
CREATE TABLE inventory (sku text PRIMARY KEY, quantity int NOT NULL, writer_epoch bigint NOT NULL DEFAULT 0);
INSERT INTO inventory VALUES ('a', 10, 5), ('b', 20, 5);`

// telemetry is an in-memory metric reader and span recorder.
type telemetry struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newTelemetry() *telemetry {
	t := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.spans))
	return t
}

// points returns the data points of the named metric as "attr=value,… → n" strings,
// sorted, for sums and histograms (n is the count of a histogram).
func (tl *telemetry) points(t *testing.T, name string, keys ...attribute.Key) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tl.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	label := func(s attribute.Set) string {
		var parts []string
		for _, k := range keys {
			if v, ok := s.Value(k); ok {
				parts = append(parts, v.String())
			}
		}
		return strings.Join(parts, " ")
	}
	var out []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, fmt.Sprintf("%s → %d", label(p.Attributes), p.Value))
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if p.Count > 0 && p.Sum <= 0 {
						t.Errorf("%s: %d observations summing to %v", name, p.Count, p.Sum)
					}
					out = append(out, fmt.Sprintf("%s → %d", label(p.Attributes), p.Count))
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	slices.Sort(out)
	return out
}

// events lists the sqlfence events of the recorded span named name (every span when
// name is ""), with their rule and result attributes.
func (tl *telemetry) events(name string) []string {
	var out []string
	for _, s := range tl.spans.Ended() {
		if name != "" && s.Name() != name {
			continue
		}
		for _, e := range s.Events() {
			if !strings.HasPrefix(e.Name, "sqlfence.") {
				continue
			}
			ev := e.Name
			for _, k := range []attribute.Key{"db.collection.name", sqlfenceotel.AttrRule, sqlfenceotel.AttrResult, sqlfenceotel.AttrEpoch} {
				for _, a := range e.Attributes {
					if a.Key == k {
						ev += " " + a.Value.String()
					}
				}
			}
			out = append(out, ev)
		}
	}
	return out
}

type database struct {
	dsn    string
	raw    *sql.DB
	policy *sqlfence.Policy
}

func newDatabase(t *testing.T, policy string) *database {
	t.Helper()
	dsn := pgtest.NewDB(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if _, err := raw.Exec(schema); err != nil {
		t.Fatal(err)
	}
	p, err := sqlfence.ParsePolicy([]byte(policy), "")
	if err != nil {
		t.Fatal(err)
	}
	return &database{dsn: dsn, raw: raw, policy: p}
}

func (d *database) inner(t *testing.T) driver.Connector {
	t.Helper()
	cfg, err := pgx.ParseConfig(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	return stdlib.GetConnector(*cfg)
}

func (d *database) state(t *testing.T) string {
	t.Helper()
	var s string
	if err := d.raw.QueryRow(`SELECT string_agg(sku || ':' || quantity || ':' || writer_epoch, ' ' ORDER BY sku) FROM inventory`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

const policy = "version: 1\ncatalog_refresh: 1h\ntables: [inventory]\n"

// handler runs the statements of a job handler through db, in one span named
// "handler": a read, a write (epoch 7), a superseded write (epoch 3), a write without
// an epoch, a TRUNCATE. It returns the errors of the last three.
func handler(t *testing.T, tl *telemetry, db *sql.DB) (fenced, unfenced, refused error) {
	t.Helper()
	ctx, span := tl.tp.Tracer("test").Start(context.Background(), "handler")
	defer span.End()
	if _, err := db.ExecContext(ctx, `SELECT count(*) FROM inventory`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(sqlfence.WithEpoch(ctx, 7), `UPDATE inventory SET quantity = 1 WHERE sku = 'a'`); err != nil {
		t.Fatal(err)
	}
	_, fenced = db.ExecContext(sqlfence.WithEpoch(ctx, 3), `UPDATE inventory SET quantity = 2 WHERE sku = 'a'`)
	_, unfenced = db.ExecContext(ctx, `DELETE FROM inventory`)
	_, refused = db.ExecContext(sqlfence.WithEpoch(ctx, 8), `TRUNCATE inventory`)
	return fenced, unfenced, refused
}

func wantErrors(t *testing.T, fenced, unfenced, refused error) {
	t.Helper()
	for _, c := range []struct {
		err  error
		kind error
		code string
	}{{fenced, sqlfence.ErrFenced, "SF101"}, {unfenced, sqlfence.ErrUnfenced, "SF201"}, {refused, sqlfence.ErrRefused, "SF301"}} {
		var e *sqlfence.Error
		if !errors.Is(c.err, c.kind) || !errors.As(c.err, &e) || e.Code != c.code {
			t.Errorf("err = %v, want %v with code %s", c.err, c.kind, c.code)
		}
	}
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n  %s\nwant:\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestMetricsAndSpans: against PostgreSQL, the in-memory reader sees the statements by
// outcome, rule and table, the fenced write and its check's latency, and the cache; the
// handler's span gets an event for every statement sqlfence changed or stopped.
func TestMetricsAndSpans(t *testing.T) {
	d := newDatabase(t, policy)
	tl := newTelemetry()
	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(tl.mp))
	if err != nil {
		t.Fatal(err)
	}
	c := sqlfence.NewConnector(d.inner(t), d.policy, o.Option())
	reg, err := o.Watch(c)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	db := sql.OpenDB(c)
	defer db.Close()

	fenced, unfenced, refused := handler(t, tl, db)
	wantErrors(t, fenced, unfenced, refused)
	if got := d.state(t); got != "a:1:7 b:20:5" {
		t.Errorf("state %s", got)
	}

	keys := []attribute.Key{sqlfenceotel.AttrEnforce, sqlfenceotel.AttrOutcome, sqlfenceotel.AttrResult, sqlfenceotel.AttrRule, "db.collection.name", "db.system.name"}
	equal(t, "sqlfence.statements", tl.points(t, "sqlfence.statements", keys...), []string{
		"on fence inventory postgresql → 2",
		"on pass postgresql → 1",
		"on refuse SF301 inventory postgresql → 1",
		"on unfenced SF201 inventory postgresql → 1",
	})
	equal(t, "sqlfence.write.results", tl.points(t, "sqlfence.write.results", keys...), []string{"on fenced SF101 inventory postgresql → 1"})
	equal(t, "sqlfence.check.duration", tl.points(t, "sqlfence.check.duration", keys...), []string{"on fenced SF101 inventory postgresql → 1"})
	equal(t, "sqlfence.cache.lookups", tl.points(t, "sqlfence.cache.lookups", sqlfenceotel.AttrCacheResult), []string{"hit → 0", "miss → 5"})
	// Five texts, and the shape plans of the texts that passed or were rewritten
	// (refusals are not planned): the cache's entries count both.
	equal(t, "sqlfence.cache.entries", tl.points(t, "sqlfence.cache.entries"), []string{" → 7"})
	if size := tl.points(t, "sqlfence.cache.size"); len(size) != 1 || size[0] == " → 0" {
		t.Errorf("sqlfence.cache.size: %v", size)
	}
	equal(t, "the handler's span events", tl.events("handler"), []string{
		"sqlfence.fence inventory 7",
		"sqlfence.fence inventory 3",
		"sqlfence.check inventory SF101 fenced 3",
		"sqlfence.unfenced inventory SF201",
		"sqlfence.refuse inventory SF301 8",
	})
}

// TestShadowMetrics: under enforce: shadow the statements run as written and the
// metrics say what enforcement would have done.
func TestShadowMetrics(t *testing.T) {
	d := newDatabase(t, policy+"enforce: shadow\n")
	tl := newTelemetry()
	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(tl.mp))
	if err != nil {
		t.Fatal(err)
	}
	c := sqlfence.NewConnector(d.inner(t), d.policy, o.Option())
	reg, err := o.Watch(c)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	db := sql.OpenDB(c)
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{`UPDATE inventory SET quantity = 1 WHERE sku = 'a'`, `UPDATE inventory SET quantity = 2 WHERE sku = 'b'`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.state(t); got != "a:1:5 b:2:5" {
		t.Errorf("shadow mode: state %s, want the writes run as written", got)
	}
	equal(t, "sqlfence.statements", tl.points(t, "sqlfence.statements", sqlfenceotel.AttrEnforce, sqlfenceotel.AttrOutcome, sqlfenceotel.AttrRule),
		[]string{"shadow unfenced SF201 → 2"})
	equal(t, "sqlfence.shadow.other_shapes", tl.points(t, "sqlfence.shadow.other_shapes"), []string{" → 0"})
	if r, ok := sqlfence.ShadowReportOf(c); !ok || r.Unfenced != 2 || len(r.Shapes) != 1 {
		t.Errorf("shadow report %+v", r)
	}
}

// TestWithOtelsql: sqlfence and otelsql compose in both orders. With otelsql outside,
// sqlfence's events land on otelsql's span for the statement; with otelsql inside,
// they land on the caller's span, and otelsql's spans show the text sqlfence sent (the
// fence included) and the check query. Either way the fence holds and the errors keep
// their sentinels and codes.
func TestWithOtelsql(t *testing.T) {
	t.Run("otelsql outside", func(t *testing.T) {
		d := newDatabase(t, policy)
		tl := newTelemetry()
		o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(tl.mp))
		if err != nil {
			t.Fatal(err)
		}
		db := otelsql.OpenDB(sqlfence.NewConnector(d.inner(t), d.policy, o.Option()),
			otelsql.WithTracerProvider(tl.tp), otelsql.WithMeterProvider(tl.mp))
		defer db.Close()
		fenced, unfenced, refused := handler(t, tl, db)
		wantErrors(t, fenced, unfenced, refused)
		if got := d.state(t); got != "a:1:7 b:20:5" {
			t.Errorf("state %s", got)
		}
		if ev := tl.events("handler"); len(ev) != 0 {
			t.Errorf("events on the handler's span: %v; want them on otelsql's", ev)
		}
		equal(t, "events on otelsql's spans", tl.events(""), []string{
			"sqlfence.fence inventory 7",
			"sqlfence.fence inventory 3",
			"sqlfence.check inventory SF101 fenced 3",
			"sqlfence.unfenced inventory SF201",
			"sqlfence.refuse inventory SF301 8",
		})
		if got := tl.points(t, "sqlfence.statements", sqlfenceotel.AttrOutcome); len(got) != 4 {
			t.Errorf("sqlfence.statements: %v", got)
		}
	})
	t.Run("otelsql inside", func(t *testing.T) {
		d := newDatabase(t, policy)
		tl := newTelemetry()
		o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(tl.mp))
		if err != nil {
			t.Fatal(err)
		}
		wrapped := otelsql.WrapDriver(stdlib.GetDefaultDriver(), otelsql.WithTracerProvider(tl.tp), otelsql.WithMeterProvider(tl.mp))
		inner, err := wrapped.(driver.DriverContext).OpenConnector(d.dsn)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(sqlfence.NewConnector(inner, d.policy, o.Option()))
		defer db.Close()
		fenced, unfenced, refused := handler(t, tl, db)
		wantErrors(t, fenced, unfenced, refused)
		if got := d.state(t); got != "a:1:7 b:20:5" {
			t.Errorf("state %s", got)
		}
		equal(t, "the handler's span events", tl.events("handler"), []string{
			"sqlfence.fence inventory 7",
			"sqlfence.fence inventory 3",
			"sqlfence.check inventory SF101 fenced 3",
			"sqlfence.unfenced inventory SF201",
			"sqlfence.refuse inventory SF301 8",
		})
		var sent []string
		for _, s := range tl.spans.Ended() {
			if s.Parent().SpanID() != spanID(tl, "handler") {
				continue
			}
			for _, a := range s.Attributes() {
				if a.Key == "db.query.text" {
					sent = append(sent, a.Value.AsString())
				}
			}
		}
		fencedText, check := 0, 0
		for _, q := range sent {
			if strings.Contains(q, "writer_epoch OPERATOR(pg_catalog.<)") {
				fencedText++
			}
			if strings.HasPrefix(q, "SELECT") && strings.Contains(q, "writer_epoch") {
				check++
			}
			if strings.Contains(q, "TRUNCATE") || strings.HasPrefix(q, "DELETE") {
				t.Errorf("otelsql saw a statement sqlfence stopped: %s", q)
			}
		}
		if fencedText != 2 || check != 1 {
			t.Errorf("otelsql's spans: %d fenced texts (want 2), %d check queries (want 1):\n%s", fencedText, check, strings.Join(sent, "\n"))
		}
	})
}

func spanID(tl *telemetry, name string) trace.SpanID {
	for _, s := range tl.spans.Ended() {
		if s.Name() == name {
			return s.SpanContext().SpanID()
		}
	}
	return trace.SpanID{}
}

func TestWatchRefusesOtherConnectors(t *testing.T) {
	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(newTelemetry().mp))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Watch(stdlib.GetConnector(pgx.ConnConfig{})); err == nil || !strings.Contains(err.Error(), "not a sqlfence connector") {
		t.Fatalf("Watch of a pgx connector: %v", err)
	}
}
