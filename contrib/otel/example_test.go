package sqlfenceotel_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sqlfence/sqlfence"
	sqlfenceotel "github.com/sqlfence/sqlfence/contrib/otel"
	"github.com/sqlfence/sqlfence/internal/nopdriver"
)

// Counting what sqlfence does. The inner connector here sends nothing anywhere, so the
// example runs without a server; in a program it is pgx's (stdlib.GetConnector), or
// use sqlfence.OpenConnector(dsn, o.Option()).
func Example() {
	reader := sdkmetric.NewManualReader() // in a program: a periodic reader and an exporter
	o, err := sqlfenceotel.New(sqlfenceotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		log.Fatal(err)
	}
	policy, err := sqlfence.ParsePolicy([]byte("version: 1\ntables: [inventory]\nresolve: none\n"), "")
	if err != nil {
		log.Fatal(err)
	}
	connector := sqlfence.NewConnector(nopdriver.Connector{}, policy, o.Option())
	reg, err := o.Watch(connector)
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Unregister()
	db := sql.OpenDB(connector)
	defer db.Close()

	ctx := context.Background()
	db.ExecContext(sqlfence.WithEpoch(ctx, 7), `UPDATE inventory SET quantity = 0 WHERE sku = $1`, "a")
	db.ExecContext(ctx, `UPDATE inventory SET quantity = 0 WHERE sku = $1`, "b") // no epoch
	db.ExecContext(ctx, `TRUNCATE inventory`)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != "sqlfence.statements" {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			outcome, _ := p.Attributes.Value(sqlfenceotel.AttrOutcome)
			rule, _ := p.Attributes.Value(sqlfenceotel.AttrRule)
			table, _ := p.Attributes.Value(attribute.Key("db.collection.name"))
			fmt.Printf("%s %s %s: %d\n", outcome.AsString(), rule.AsString(), table.AsString(), p.Value)
		}
	}
	// Unordered output:
	// fence  inventory: 1
	// unfenced SF201 inventory: 1
	// refuse SF301 inventory: 1
}
