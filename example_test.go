package sqlfence_test

import (
	"database/sql"
	"errors"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence"
)

// Plan shows what the driver sends for a statement, without a database: the
// application's text with the fence inserted, the epoch as one more parameter.
func ExamplePolicy_Plan() {
	policy, err := sqlfence.ParsePolicy([]byte("version: 1\ntables:\n  - name: inventory\n"), "example.yaml")
	if err != nil {
		panic(err)
	}
	plan := policy.Plan(`UPDATE inventory SET quantity = quantity - $2 /* app=worker */ WHERE sku = $1`)
	fmt.Println(plan.Fenced)
	fmt.Println("epoch parameter:", plan.EpochParam)

	plan = policy.Plan(`SELECT quantity FROM inventory WHERE sku = $1`)
	fmt.Printf("read: %q\n", plan.Fenced)

	plan = policy.Plan(`TRUNCATE inventory`)
	fmt.Println(errors.Is(plan.Err, sqlfence.ErrRefused))
	// Output:
	// /*sqlfence fenced: inventory*/ UPDATE inventory SET quantity = quantity - $2, writer_epoch = $3::bigint /* app=worker */ WHERE (sku = $1) AND inventory.writer_epoch OPERATOR(pg_catalog.<) $3::bigint
	// epoch parameter: 3
	// read: ""
	// true
}

// A policy error names the file, the line and what is allowed.
func ExampleParsePolicy_error() {
	_, err := sqlfence.ParsePolicy([]byte("version: 1\nmode: strcit\ntables: [inventory]\n"), "sqlfence.yaml")
	fmt.Println(err)
	// Output:
	// sqlfence: policy sqlfence.yaml line 2: mode must be one of strict, repeatable; got "strcit"
}

// A pgx connector you configured, wrapped (compiled, not run: it needs a server). The
// startup parameters are the ones the registered driver pins.
func ExampleNewConnector_pgx() {
	policy, err := sqlfence.LoadPolicy("sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := pgx.ParseConfig("postgres://app@db/app")
	if err != nil {
		log.Fatal(err)
	}
	cfg.RuntimeParams[sqlfence.GuardSetting] = "on" // for the database-side guard
	cfg.RuntimeParams["standard_conforming_strings"] = "on"
	db := sql.OpenDB(sqlfence.NewConnector(stdlib.GetConnector(*cfg), policy))
	defer db.Close()
}

// A config registered with pgx's stdlib opens through the driver "sqlfence" by its
// name, as through "pgx" (compiled, not run: it needs a server).
func ExampleDriver_OpenConnector_registeredConfig() {
	cfg, err := pgx.ParseConfig("postgres://app@db/app")
	if err != nil {
		log.Fatal(err)
	}
	name := stdlib.RegisterConnConfig(cfg)
	defer stdlib.UnregisterConnConfig(name)
	db, err := sql.Open("sqlfence", name+" sqlfence_policy=sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
}
