package sqlfenceotel_test

import (
	"context"
	"database/sql/driver"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sqlfence/sqlfence"
	sqlfenceotel "github.com/sqlfence/sqlfence/contrib/otel"
	"github.com/sqlfence/sqlfence/internal/nopdriver"
)

// BenchmarkObserver: what the observer adds to a statement whose decision is cached,
// on a driver that sends nothing: none, the OTel observer with the SDK's meter (a
// manual reader), and the same inside a recording span (span events).
//
//	go test -run '^$' -bench Observer -count 6 ./contrib/otel
func BenchmarkObserver(b *testing.B) {
	p, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nresolve: none\n"), "")
	if err != nil {
		b.Fatal(err)
	}
	args := []driver.NamedValue{{Ordinal: 1, Value: "a"}, {Ordinal: 2, Value: int64(1)}}
	queries := []struct{ name, query string }{
		{"fenced-update", `UPDATE inventory SET quantity = quantity - $2 WHERE sku = $1`},
		{"read", `SELECT quantity FROM inventory WHERE sku = $1 AND quantity > $2`},
	}
	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))))
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	for _, q := range queries {
		for _, mode := range []string{"none", "otel", "otel-span"} {
			b.Run(q.name+"/"+mode, func(b *testing.B) {
				var opts []sqlfence.ConnectorOption
				if mode != "none" {
					opts = append(opts, o.Option())
				}
				ctx := sqlfence.WithEpoch(context.Background(), 7)
				if mode == "otel-span" {
					ctx, _ = tp.Tracer("bench").Start(ctx, "handler")
				}
				cn, err := sqlfence.NewConnector(nopdriver.Connector{}, p, opts...).Connect(ctx)
				if err != nil {
					b.Fatal(err)
				}
				ex := cn.(driver.ExecerContext)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ex.ExecContext(ctx, q.query, args); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
