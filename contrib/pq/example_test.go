package sqlfencepq_test

import (
	"database/sql"
	"log"

	"github.com/lib/pq"

	"github.com/sqlfence/sqlfence"
)

// The lib/pq snippet of docs/orms-and-queues.md (compiled, not run: it needs a server).
func Example() {
	policy, err := sqlfence.LoadPolicy("sqlfence.yaml")
	if err != nil {
		log.Fatal(err)
	}
	// pq sends parameters it does not know as startup parameters: the guard's setting
	// (sqlfence.GuardSetting) rides in the startup message at no cost.
	connector, err := pq.NewConnector("postgres://app@db/app?sqlfence.fenced=on")
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(sqlfence.NewConnector(connector, policy))
	defer db.Close()
}
