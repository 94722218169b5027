// The catalog version: a counter that sqlfence's event triggers move on every DDL
// statement of any session (sqlfence guard --apply installs it), read by a connector
// before it reads the catalog, and compared by the guard with the version each fenced
// statement carries.

package pgcatalog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// VersionLock is the advisory lock key of the catalog version: every DDL transaction
// holds it shared from its first DDL statement to its end (the event trigger takes
// it), and Version takes it exclusively for the moment it reads the counter, so the
// version it returns is never one whose DDL is still uncommitted.
const VersionLock = 7294611953

// versionSQL waits for the DDL in flight, reads the counter (NULL when sqlfence's
// sequence is missing), says whether both event triggers fire in every session and
// the guard's trigger function compares versions, and returns the event triggers'
// row versions, and whether a user routine exists (CatalogVersion.Routines).
//
// Enabled means ENABLE ALWAYS ('A'): one enabled plainly ('O') fires no DDL of a
// session with session_replication_role = replica. The row versions (oid and xmin)
// change with every ALTER EVENT TRIGGER and with a drop and re-create, which fire no
// event trigger themselves: DDL made while the triggers were disabled, and then
// enabled again, moved no version, but it moved their rows.
var versionSQL = `
SELECT v.version, v.triggers, v.guard, v.rows, v.carries, v.routines, pg_catalog.pg_advisory_unlock(` + strconv.Itoa(VersionLock) + `)
FROM (SELECT pg_catalog.pg_advisory_lock(` + strconv.Itoa(VersionLock) + `) AS locked,
             pg_catalog.pg_sequence_last_value(pg_catalog.to_regclass('sqlfence.catalog_version')) AS version,
             (SELECT pg_catalog.count(*) FROM pg_catalog.pg_event_trigger e
              WHERE e.evtname IN ('sqlfence_catalog_ddl', 'sqlfence_catalog_drop') AND e.evtenabled = 'A') = 2 AS triggers,
             EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'sqlfence' AND p.proname = 'guard' AND p.prosrc LIKE '%sqlfence.catalog_version%') AS guard,
             (SELECT pg_catalog.string_agg(e.evtname OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) e.oid::pg_catalog.text
                         OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) e.xmin::pg_catalog.text, ' ' ORDER BY e.evtname)
              FROM pg_catalog.pg_event_trigger e
              WHERE e.evtname IN ('sqlfence_catalog_ddl', 'sqlfence_catalog_drop')) AS rows,
             EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
                     WHERE n.nspname = 'sqlfence' AND p.proname = 'guard_row' AND p.prosrc LIKE '%` + GuardCarriesTag + `%') AS carries,
             (` + RoutinesSQL + `) AS routines
      OFFSET 0) v`

// GuardCarriesTag is written in the guard's row trigger function: the guard fences
// the writes the server makes on a fenced statement's behalf with the epoch the
// statement carries. Its number changes when what the driver may rely on does, so a
// connector never trusts an older guard with them.
const GuardCarriesTag = "sqlfence guard carries epochs: 1"

// CatalogVersion is what Version read.
type CatalogVersion struct {
	Version  int64 // 0 when the counter is missing
	Triggers bool  // both event triggers exist and fire in every session (ENABLE ALWAYS)
	Guard    bool  // the guard's trigger function compares versions
	// Rows are the event triggers' row versions: two reads with the same Version but
	// other Rows have DDL between them that no event trigger saw.
	Rows    string
	Carries bool // the guard fences the server's writes with a carried epoch (GuardCarriesTag)
	// Routines: a routine is in a user schema (RoutinesSQL). The catalog read that
	// follows reads the bound routines in full only where one is, and checks again
	// in its own snapshot.
	Routines bool
}

// Installed reports whether DDL of any session moves the version and the guard
// checks it.
func (v CatalogVersion) Installed() bool { return v.Version > 0 && v.Triggers && v.Guard }

// Same reports whether w is the catalog v was: the same version, moved by the same
// event triggers, both installed.
func (v CatalogVersion) Same(w CatalogVersion) bool {
	return v.Installed() && w.Installed() && v.Version == w.Version && v.Rows == w.Rows
}

// Version reads the catalog version. It waits for DDL transactions in flight to end
// (VersionLock): read before the catalog in a fresh snapshot, the version it
// returns is at most the catalog's, so a fenced statement decided on that catalog
// can only carry a version that is too old, which the guard refuses — never one
// that is too new.
func Version(ctx context.Context, query QueryFunc) (CatalogVersion, error) {
	rows, err := query(ctx, versionSQL)
	if err != nil {
		return CatalogVersion{}, err
	}
	if len(rows) != 1 || len(rows[0]) != 7 {
		return CatalogVersion{}, fmt.Errorf("pgcatalog: catalog version query returned %v", rows)
	}
	var v CatalogVersion
	switch n := rows[0][0].(type) {
	case nil:
	case int64:
		v.Version = n
	default:
		return CatalogVersion{}, fmt.Errorf("pgcatalog: catalog version is a %T", n)
	}
	v.Triggers, _ = rows[0][1].(bool)
	v.Guard, _ = rows[0][2].(bool)
	v.Rows, _ = rows[0][3].(string)
	v.Carries, _ = rows[0][4].(bool)
	v.Routines, _ = rows[0][5].(bool)
	return v, nil
}

// unguardedSQL lists, of the relations {oids} (a query of one oid or int8 column),
// those that are not views and carry no sqlfence_guard statement trigger that fires
// in every session (ENABLE ALWAYS; ALTER TABLE … DISABLE TRIGGER, ENABLE TRIGGER and
// ENABLE REPLICA TRIGGER all take that away): writes to them are not compared with
// the catalog version.
const unguardedSQL = `
SELECT c.oid::pg_catalog.regclass::text
FROM pg_catalog.pg_class c
WHERE c.oid IN ({oids}) AND c.relkind <> 'v'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                  WHERE t.tgrelid = c.oid AND t.tgname = 'sqlfence_guard' AND t.tgenabled = 'A')`

// UnguardedRead lists, of the relations oids names (a query of one oid or int8
// column: Reads.Ref's c1 of other reads), those that have no guard trigger enabled
// always, in order.
func UnguardedRead(oids string) Read {
	return Read{What: "unguarded relations", SQL: strings.ReplaceAll(unguardedSQL, "{oids}", oids), Columns: 1, Order: "c1"}
}

// uncarriedSQL lists, of the relations {oids}, those that hold rows (not views or
// partitioned parents) and carry no enabled sqlfence_guard_row trigger: the guard
// cannot compare and stamp the rows the server writes into them for a statement.
const uncarriedSQL = `
SELECT c.oid::pg_catalog.regclass::text
FROM pg_catalog.pg_class c
WHERE c.oid IN ({oids}) AND c.relkind NOT IN ('v', 'p')
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                  WHERE t.tgrelid = c.oid AND t.tgname = 'sqlfence_guard_row' AND t.tgenabled <> 'D')`

// UncarriedRead lists, of the relations oids names (as UnguardedRead), those that
// hold rows and have no enabled guard row trigger, in order.
func UncarriedRead(oids string) Read {
	return Read{What: "relations without the guard's row trigger", SQL: strings.ReplaceAll(uncarriedSQL, "{oids}", oids), Columns: 1, Order: "c1"}
}

// Bool reads the one bool of a read of one row and column (RoutinesRead).
func Bool(what string, rows [][]any) (bool, error) {
	if len(rows) == 1 && len(rows[0]) == 1 {
		if b, ok := rows[0][0].(bool); ok {
			return b, nil
		}
	}
	return false, fmt.Errorf("pgcatalog: the %s query returned %v, want one bool", what, rows)
}

// Strings are the values of rows of one text column.
func Strings(what string, rows [][]any) ([]string, error) {
	out := make([]string, 0, len(rows))
	for _, row := range rows {
		s, ok := rowString(row)
		if !ok {
			return nil, fmt.Errorf("pgcatalog: %s query returned unexpected values %v", what, row)
		}
		out = append(out, s)
	}
	return out, nil
}
