// Package sqlfenceotel reports what sqlfence does as OpenTelemetry metrics and span
// events: statements by outcome and rule code, fenced and already-written writes by
// table, the checks that explain a fenced write's result and their latency, the
// decision cache, and what shadow mode would have done.
//
//	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(mp))
//	connector := sqlfence.NewConnector(inner, policy, o.Option()) // or sqlfence.OpenConnector(dsn, o.Option())
//	reg, err := o.Watch(connector)                                // the cache's gauges
//	db := sql.OpenDB(connector)
//
// Span events go to the span in the statement's context: the caller's, or otelsql's
// when otelsql wraps the sqlfence connector. It composes with otelsql in either order.
package sqlfenceotel

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sqlfence/sqlfence"
)

// ScopeName is the instrumentation scope of the meter.
const ScopeName = "github.com/sqlfence/sqlfence/contrib/otel"

// The attributes sqlfence adds to the database client conventions' own
// (db.system.name, db.collection.name).
const (
	// AttrOutcome: what sqlfence did with a statement (sqlfence.Outcome's String:
	// pass, fence, refuse, unfenced, let_through).
	AttrOutcome = attribute.Key("sqlfence.outcome")
	// AttrRule: the rule code (SF301 …).
	AttrRule = attribute.Key("sqlfence.rule")
	// AttrEnforce: on, or shadow when nothing was enforced and the outcome is what
	// enforcement would have done.
	AttrEnforce = attribute.Key("sqlfence.enforce")
	// AttrResult: what checking a fenced write's result found: fenced,
	// already_written, none, or error.
	AttrResult = attribute.Key("sqlfence.result")
	// AttrEpoch: the execution's epoch, on span events.
	AttrEpoch = attribute.Key("sqlfence.epoch")
	// AttrCacheResult: hit or miss, on sqlfence.cache.lookups.
	AttrCacheResult = attribute.Key("sqlfence.cache.result")
)

// An Option configures [New].
type Option func(*Observer)

// WithMeterProvider sets the meter provider (default: the global one).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *Observer) { o.mp = mp }
}

// Observer turns sqlfence's events into metrics and span events.
type Observer struct {
	mp    metric.MeterProvider
	meter metric.Meter

	statements metric.Int64Counter
	results    metric.Int64Counter
	checks     metric.Float64Histogram

	// sets holds the attribute sets made so far, by what they are made of: making
	// one sorts and allocates, and a program has few (outcomes × codes × tables).
	mu   sync.RWMutex
	sets map[setKey]attrs
}

// attrs are an event's attributes, as a set and as the option that passes them.
type attrs struct {
	set attribute.Set
	opt metric.MeasurementOption
}

// maxSets bounds the attribute sets kept; past it, sets are made per event.
const maxSets = 4096

type setKey struct {
	outcome     sqlfence.Outcome
	shadow      bool
	code, table string
	result      string
}

// New makes the instruments.
func New(opts ...Option) (*Observer, error) {
	o := &Observer{sets: map[setKey]attrs{}}
	for _, opt := range opts {
		opt(o)
	}
	if o.mp == nil {
		o.mp = otel.GetMeterProvider()
	}
	o.meter = o.mp.Meter(ScopeName)
	var err, e error
	o.statements, e = o.meter.Int64Counter("sqlfence.statements", metric.WithUnit("{statement}"),
		metric.WithDescription("Statements sqlfence decided, by outcome (pass, fence, refuse, unfenced, let_through), rule code and protected table."))
	err = errors.Join(err, e)
	o.results, e = o.meter.Int64Counter("sqlfence.write.results", metric.WithUnit("{write}"),
		metric.WithDescription("Fenced writes whose result sqlfence checked, by what it found (fenced, already_written, none, error), rule code and table."))
	err = errors.Join(err, e)
	o.checks, e = o.meter.Float64Histogram("sqlfence.check.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the queries that check a fenced write's result (a write that affected no rows, exact accounting, a claim-checked write)."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("sqlfenceotel: making the instruments: %w", err)
	}
	return o, nil
}

// Option is the connector option that hands the connector's events to o.
func (o *Observer) Option() sqlfence.ConnectorOption { return sqlfence.WithObserver(o.Observe) }

// Observe records one event; Option passes it to sqlfence.WithObserver.
func (o *Observer) Observe(ctx context.Context, e sqlfence.Event) {
	k := setKey{outcome: e.Outcome, shadow: e.Shadow, code: e.Code, table: e.Table}
	if e.Outcome == sqlfence.OutcomeChecked {
		k.result = result(e.Err)
	}
	a := o.attrs(k)
	if e.Outcome == sqlfence.OutcomeChecked {
		o.results.Add(ctx, 1, a.opt)
		if e.Duration > 0 {
			o.checks.Record(ctx, e.Duration.Seconds(), a.opt)
		}
	} else {
		o.statements.Add(ctx, 1, a.opt)
	}
	if e.Outcome == sqlfence.OutcomePass {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	kvs := a.set.ToSlice()
	if e.Epoch != 0 {
		kvs = append(kvs, AttrEpoch.Int64(e.Epoch))
	}
	span.AddEvent("sqlfence."+eventName(e), trace.WithAttributes(kvs...))
}

// attrs returns the attributes of the events k describes.
func (o *Observer) attrs(k setKey) attrs {
	o.mu.RLock()
	a, ok := o.sets[k]
	o.mu.RUnlock()
	if ok {
		return a
	}
	kvs := make([]attribute.KeyValue, 0, 6)
	kvs = append(kvs, semconv.DBSystemNamePostgreSQL, enforce(k.shadow))
	if k.table != "" {
		kvs = append(kvs, semconv.DBCollectionName(k.table))
	}
	if k.code != "" {
		kvs = append(kvs, AttrRule.String(k.code))
	}
	if k.outcome == sqlfence.OutcomeChecked {
		kvs = append(kvs, AttrResult.String(k.result))
	} else {
		kvs = append(kvs, AttrOutcome.String(k.outcome.String()))
	}
	a.set = attribute.NewSet(kvs...)
	a.opt = metric.WithAttributeSet(a.set)
	o.mu.Lock()
	if len(o.sets) < maxSets {
		o.sets[k] = a
	}
	o.mu.Unlock()
	return a
}

func eventName(e sqlfence.Event) string {
	if e.Outcome == sqlfence.OutcomeChecked {
		return "check"
	}
	return e.Outcome.String()
}

func enforce(shadow bool) attribute.KeyValue {
	if shadow {
		return AttrEnforce.String("shadow")
	}
	return AttrEnforce.String("on")
}

func result(err error) string {
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, sqlfence.ErrFenced):
		return "fenced"
	case errors.Is(err, sqlfence.ErrAlreadyWritten):
		return "already_written"
	}
	return "error"
}

// Watch registers the gauges of one connector: its decision cache (lookups by hit or
// miss, evictions, entries, bytes) and, under `enforce: shadow`, the statements
// counted in no shape (sqlfence.shadow.other_shapes). Unregister the registration
// when the connector is closed.
func (o *Observer) Watch(c driver.Connector) (metric.Registration, error) {
	if _, ok := sqlfence.CacheStatsOf(c); !ok {
		return nil, fmt.Errorf("sqlfenceotel: Watch: %T is not a sqlfence connector (sqlfence.NewConnector, sqlfence.OpenConnector)", c)
	}
	var err, e error
	lookups, e := o.meter.Int64ObservableCounter("sqlfence.cache.lookups", metric.WithUnit("{lookup}"),
		metric.WithDescription("Decision cache lookups, by hit or miss (a miss parses the statement)."))
	err = errors.Join(err, e)
	evictions, e := o.meter.Int64ObservableCounter("sqlfence.cache.evictions", metric.WithUnit("{entry}"),
		metric.WithDescription("Decisions evicted from the cache to keep within its bounds."))
	err = errors.Join(err, e)
	entries, e := o.meter.Int64ObservableUpDownCounter("sqlfence.cache.entries", metric.WithUnit("{entry}"),
		metric.WithDescription("Decisions cached."))
	err = errors.Join(err, e)
	size, e := o.meter.Int64ObservableUpDownCounter("sqlfence.cache.size", metric.WithUnit("By"),
		metric.WithDescription("The cached decisions' accounted size."))
	err = errors.Join(err, e)
	other, e := o.meter.Int64ObservableCounter("sqlfence.shadow.other_shapes", metric.WithUnit("{statement}"),
		metric.WithDescription("Shadow mode: statements that would have been fenced, refused or left unfenced, in shapes beyond the ones counted one by one."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("sqlfenceotel: making the cache instruments: %w", err)
	}
	hit := metric.WithAttributes(AttrCacheResult.String("hit"))
	miss := metric.WithAttributes(AttrCacheResult.String("miss"))
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		st, _ := sqlfence.CacheStatsOf(c)
		obs.ObserveInt64(lookups, int64(st.Hits), hit)
		obs.ObserveInt64(lookups, int64(st.Misses), miss)
		obs.ObserveInt64(evictions, int64(st.Evictions))
		obs.ObserveInt64(entries, int64(st.Entries))
		obs.ObserveInt64(size, int64(st.Bytes))
		if r, ok := sqlfence.ShadowReportOf(c); ok {
			obs.ObserveInt64(other, int64(r.OtherShapes))
		}
		return nil
	}, lookups, evictions, entries, size, other)
}
