// What the database-side guard (sqlfence guard) left in the catalog: its triggers on
// each relation and its event triggers, with the replication roles they fire in.
// sqlfence doctor judges a deployment on it; the guard's installer and the connector
// ask narrower questions (Unguarded, Version) of the same catalog.

package pgcatalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// The names the guard gives its triggers.
const (
	GuardTrigger      = "sqlfence_guard"       // the statement trigger: only the driver's fenced writes pass
	GuardEpochTrigger = "sqlfence_guard_epoch" // the row trigger: no UPDATE lowers the epoch
)

// GuardEventTriggers are the event triggers that move the catalog version.
var GuardEventTriggers = []string{"sqlfence_catalog_ddl", "sqlfence_catalog_drop"}

// Firing is a trigger's pg_trigger.tgenabled (or pg_event_trigger.evtenabled): when
// it fires, by session_replication_role.
type Firing string

const (
	FiresAlways  Firing = "A" // in every replication role: what the guard needs
	FiresOrigin  Firing = "O" // the default of CREATE TRIGGER: not with session_replication_role = replica
	FiresReplica Firing = "R" // only with session_replication_role = replica
	Disabled     Firing = "D"
	Missing      Firing = ""
)

// Describe says in words when a trigger with this firing runs.
func (f Firing) Describe() string {
	switch f {
	case FiresAlways:
		return "fires in every replication role"
	case FiresOrigin:
		return "origin-only (a session with session_replication_role = replica skips it)"
	case FiresReplica:
		return "replica-only (ordinary sessions skip it)"
	case Disabled:
		return "disabled"
	}
	return "missing"
}

// GuardedRelation is what the guard put on one relation.
type GuardedRelation struct {
	OID  uint32
	Name string // schema-qualified, quoted where needed
	// Statement is the firing of the statement trigger; StatementInsert says whether
	// it covers INSERT (sqlfence guard --no-insert leaves it out).
	Statement       Firing
	StatementInsert bool
	// Epoch is the firing of the row trigger, EpochColumn the column it was
	// installed for ("" when missing).
	Epoch       Firing
	EpochColumn string
}

// guardStateSQL reads both triggers of the relations $1 (oids as an array literal).
// tgargs holds the trigger's arguments, each ended by a NUL byte.
const guardStateSQL = `
SELECT c.oid::int8, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),
       coalesce(s.tgenabled::text, ''), coalesce((s.tgtype & 4) <> 0, false),
       coalesce(e.tgenabled::text, ''),
       coalesce(pg_catalog.split_part(pg_catalog.encode(e.tgargs, 'escape'), '\000', 1), '')
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_trigger s ON s.tgrelid = c.oid AND s.tgname = '` + GuardTrigger + `'
LEFT JOIN pg_catalog.pg_trigger e ON e.tgrelid = c.oid AND e.tgname = '` + GuardEpochTrigger + `'
WHERE c.oid = ANY ($1::text::pg_catalog.oid[])
ORDER BY 2`

// GuardState reads what the guard put on each relation of oids.
func GuardState(ctx context.Context, query QueryFunc, oids []uint32) ([]GuardedRelation, error) {
	if len(oids) == 0 {
		return nil, nil
	}
	rows, err := query(ctx, guardStateSQL, oidArray(oids))
	if err != nil {
		return nil, err
	}
	out := make([]GuardedRelation, 0, len(rows))
	for _, r := range rows {
		if len(r) != 6 {
			return nil, fmt.Errorf("pgcatalog: guard state query returned %d columns, want 6", len(r))
		}
		oid, ok1 := r[0].(int64)
		name, ok2 := r[1].(string)
		st, ok3 := r[2].(string)
		ins, ok4 := r[3].(bool)
		ep, ok5 := r[4].(string)
		col, ok6 := r[5].(string)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
			return nil, fmt.Errorf("pgcatalog: guard state query returned unexpected values %v", r)
		}
		out = append(out, GuardedRelation{OID: uint32(oid), Name: name, Statement: Firing(st), StatementInsert: ins, Epoch: Firing(ep), EpochColumn: col})
	}
	return out, nil
}

// guardedElsewhereSQL lists the relations that carry the guard's statement trigger,
// other than the oids $1 and their parents (which the guard covers too): relations
// the guard covers that the policy does not name.
const guardedElsewhereSQL = `
WITH RECURSIVE covered (oid) AS (
	SELECT pg_catalog.unnest($1::text::pg_catalog.oid[])
	UNION
	SELECT i.inhparent FROM pg_catalog.pg_inherits i JOIN covered ON i.inhrelid = covered.oid)
SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) FROM pg_catalog.pg_trigger t
JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE t.tgname = '` + GuardTrigger + `' AND NOT EXISTS (SELECT 1 FROM covered WHERE covered.oid = c.oid)
ORDER BY 1`

// GuardedElsewhere returns the relations, other than oids and their parents, that
// carry the guard's statement trigger.
func GuardedElsewhere(ctx context.Context, query QueryFunc, oids []uint32) ([]string, error) {
	return strings1(ctx, query, "guarded relations", guardedElsewhereSQL, oidArray(oids))
}

// guardedInSchemaSQL lists the relations of the schema $1 that carry the guard's
// statement trigger.
const guardedInSchemaSQL = `
SELECT c.relname::text FROM pg_catalog.pg_trigger t
JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE t.tgname = '` + GuardTrigger + `' AND n.nspname = $1
ORDER BY 1`

// GuardedInSchema returns the relations of schema that carry the guard's statement
// trigger: the guard covers a policy's unqualified names in every schema, tables
// created later among them.
func GuardedInSchema(ctx context.Context, query QueryFunc, schema string) ([]string, error) {
	return strings1(ctx, query, "guarded relations", guardedInSchemaSQL, schema)
}

// eventTriggersSQL reads the firing of the catalog version's event triggers.
var eventTriggersSQL = `SELECT n, coalesce((SELECT e.evtenabled::text FROM pg_catalog.pg_event_trigger e WHERE e.evtname = n), '')
FROM pg_catalog.unnest(ARRAY['` + strings.Join(GuardEventTriggers, "', '") + `']) n ORDER BY 1`

// EventTriggers returns the firing of each of GuardEventTriggers, by name.
func EventTriggers(ctx context.Context, query QueryFunc) (map[string]Firing, error) {
	rows, err := query(ctx, eventTriggersSQL)
	if err != nil {
		return nil, err
	}
	out := map[string]Firing{}
	for _, r := range rows {
		if len(r) != 2 {
			return nil, fmt.Errorf("pgcatalog: event trigger query returned %v", r)
		}
		n, _ := r[0].(string)
		f, _ := r[1].(string)
		out[n] = Firing(f)
	}
	return out, nil
}

func oidArray(oids []uint32) string {
	parts := make([]string, len(oids))
	for i, o := range oids {
		parts[i] = strconv.FormatUint(uint64(o), 10)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
