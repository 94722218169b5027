package sqlfence_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sqlfence/sqlfence"
)

// The search's catalog cases (search_test.go): what a decision assumes of the
// catalog — that the snapshot it was made on is the one the server runs the
// statement against — attacked by DDL another session makes after the connector
// read the catalog, by routes that fire none of the guard's event triggers or that
// switch the guard off. The statement that reaches the new object is often sent once
// before the DDL too, so that a decision cached then is the one under attack. The
// guard is installed in every case: without it, DDL by another session is seen only
// at the next catalog_refresh (1h in the attack policies), a window the docs state.

// srchRoutes wrap DDL (%s) in what keeps the catalog version from moving, or the
// guard from firing, or neither (the control).
var srchRoutes = []string{
	`%s`,
	"SET session_replication_role = replica;\n%s;\nRESET session_replication_role",
	"BEGIN;\nSET LOCAL session_replication_role = replica;\n%s;\nCOMMIT",
	"SET session_replication_role = local;\n%s;\nRESET session_replication_role",
	"ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE;\n%s",
	"ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE;\nALTER EVENT TRIGGER sqlfence_catalog_drop DISABLE;\n%s",
	"ALTER EVENT TRIGGER sqlfence_catalog_ddl DISABLE;\n%s;\nALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE ALWAYS",
	"ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE;\nSET session_replication_role = replica;\n%s;\nRESET session_replication_role",
	"ALTER EVENT TRIGGER sqlfence_catalog_ddl ENABLE REPLICA;\n%s",
	"DROP EVENT TRIGGER sqlfence_catalog_ddl;\n%s",
	"ALTER TABLE inventory DISABLE TRIGGER sqlfence_guard;\n%s",
	"ALTER TABLE inventory DISABLE TRIGGER USER;\n%s",
	"ALTER TABLE inventory ENABLE TRIGGER sqlfence_guard;\nSET session_replication_role = replica;\n%s;\nRESET session_replication_role",
	"ALTER ROLE ${user} IN DATABASE ${db} SET session_replication_role = replica;\n%s",
}

// srchCatalogObjects are objects that only DDL after the catalog read can attack:
// rules and children on the protected table itself, and defaults that call a writer.
var srchCatalogObjects = []srchObject{
	{name: "also-rule",
		setup: `CREATE RULE srch_purge AS ON INSERT TO inventory DO ALSO DELETE FROM inventory WHERE sku = 'a'`,
		uses:  []string{`INSERT INTO inventory (sku, quantity) VALUES ('n', 1)`}},
	{name: "instead-rule",
		setup: `CREATE RULE srch_lift AS ON INSERT TO inventory DO INSTEAD UPDATE inventory SET quantity = 0 WHERE sku = 'a'`,
		uses:  []string{`INSERT INTO inventory (sku, quantity) VALUES ('n', 1)`}},
	{name: "inherits-child",
		// No rows: the judge would charge a row the other session inserts to the run.
		setup: `CREATE TABLE public.srch_old () INHERITS (inventory)`,
		uses:  []string{`UPDATE srch_old SET quantity = 0`, `DELETE FROM srch_old`, `UPDATE srch_old SET quantity = $1`}},
	{name: "routed-child",
		setup: `CREATE TABLE public.srch_new () INHERITS (inventory);
CREATE RULE srch_route AS ON INSERT TO inventory DO INSTEAD INSERT INTO srch_new VALUES (NEW.*);
CREATE RULE srch_purge2 AS ON INSERT TO srch_new DO ALSO DELETE FROM inventory WHERE sku = 'a'`,
		uses: []string{`INSERT INTO inventory (sku, quantity) VALUES ('n', 1)`}},
	{name: "writing-default",
		setup: `CREATE FUNCTION public.srch_d() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$;
ALTER TABLE staging ALTER COLUMN q SET DEFAULT public.srch_d()`,
		uses: []string{`INSERT INTO staging (sku) VALUES ('d')`, `INSERT INTO staging DEFAULT VALUES`}},
	{name: "replaced-function",
		pre:   `CREATE FUNCTION public.srch_f() RETURNS int LANGUAGE sql AS 'SELECT 1';`,
		setup: `CREATE OR REPLACE FUNCTION public.srch_f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN UPDATE inventory SET quantity = 0; RETURN 1; END $$`,
		calls: []srchCall{{"srch_f()", ""}, {"public.srch_f()", ""}}},
	{name: "replaced-view",
		pre:   `CREATE VIEW public.srch_rv AS SELECT sku FROM staging;`,
		setup: `CREATE OR REPLACE VIEW public.srch_rv AS SELECT sku, quantity FROM inventory`,
		uses:  []string{`UPDATE srch_rv SET quantity = 0`, `DELETE FROM srch_rv`}},
}

// srchCatalogCase derives catalog case n of the search seeded with seed.
func srchCatalogCase(seed uint64, n int) *atkCase {
	r := rand.New(rand.NewPCG(seed^0xca7a1, uint64(n)))
	objs := append(srchObjects(r), srchCatalogObjects...)
	o := objs[r.IntN(len(objs))]
	c := &atkCase{file: "search", name: fmt.Sprintf("search-%d-%d", seed, n), class: "ddl", policy: "catalog", open: "connector", guard: true,
		setup: o.pre,
		// The guard's setting, as the registered driver and pgxfence.Open set it:
		// without it the guard rejects every write, the fresh ones too.
		afterConnect: []string{"SET " + sqlfence.GuardSetting + " = on"}}
	reach := srchReach(r, o)
	if r.IntN(3) > 0 {
		// The same text first, decided (and cached) on the catalog before the DDL.
		first := *reach
		c.steps = append(c.steps, &first)
	} else {
		c.steps = append(c.steps, &atkStep{kind: "exec", sql: srchFenced[r.IntN(len(srchFenced))]})
	}
	ddl := strings.TrimSuffix(strings.TrimSpace(o.setup), ";")
	route := srchRoutes[r.IntN(len(srchRoutes))]
	c.steps = append(c.steps, &atkStep{kind: "other", sql: fmt.Sprintf(route, ddl)})
	for _, b := range o.before {
		c.steps = append(c.steps, &atkStep{kind: "exec", sql: b})
	}
	c.steps = append(c.steps, reach)
	if r.IntN(2) == 0 {
		c.steps = append(c.steps, srchReach(r, o))
	}
	if r.IntN(3) == 0 {
		c.steps = append(c.steps, &atkStep{kind: "exec", sql: srchFenced[r.IntN(len(srchFenced))]})
	}
	return c
}
