// The catalog's fingerprint: one query whose answer moves whenever a row of any
// catalog the snapshot is read from changes, so that catalog_refresh can ask "has
// anything changed?" every period for the price of a scan, and read the whole catalog
// only when it has.

package pgcatalog

import (
	"context"
	"fmt"
	"strings"
)

// FingerprintCatalogs are the catalogs the fingerprint covers: every catalog a query
// of Resolve reads (Version, Relations, Unguarded, Similar, SearchPath and the
// snapshot's), directly or through the server functions it calls (pg_get_functiondef,
// pg_get_viewdef, pg_get_ruledef, pg_get_indexdef, format_type,
// pg_relation_is_updatable, regclass and regnamespace lookups), and pg_db_role_setting,
// where a role's or database's search_path for new sessions — the sessions the
// catalog is read on — lives. TestFingerprintCoversQueries parses those queries and
// holds this list to them.
var FingerprintCatalogs = []string{
	"pg_aggregate", "pg_am", "pg_amop", "pg_amproc", "pg_attrdef", "pg_attribute", "pg_cast", "pg_class", "pg_collation",
	"pg_constraint", "pg_db_role_setting", "pg_depend", "pg_event_trigger", "pg_extension",
	"pg_index", "pg_inherits", "pg_language", "pg_namespace", "pg_opclass", "pg_operator",
	"pg_opfamily", "pg_policy", "pg_proc", "pg_range", "pg_rewrite", "pg_statistic_ext", "pg_trigger", "pg_type",
}

// FingerprintSQL is the fingerprint's query: for each catalog, the number of its rows
// and the sum of a 64-bit hash of each row version's identity, (xmin, ctid): the
// ctid's hash keyed by the xmin's. (Hashing the two as one text costs twice as much
// per row: the text of a tid and a concatenation for each of the ~12 000 rows of an
// empty database.)
//
// Why it moves with every change: a committed INSERT or UPDATE of a catalog row
// writes a new row version whose xmin is the writing transaction, and the old version
// still occupies its slot when the new one is placed, so the new (xmin, ctid) pair is
// one no version visible before had; a DELETE removes a pair. Either changes the
// multiset of pairs, and so the count or — but for a 2⁻⁶⁴ collision of the sums — the
// sum. A rolled-back change leaves no visible version and moves nothing (nor does it
// change what the full read would see). What moves it without changing what the full
// read sees — another session's temporary table, VACUUM FULL of a catalog, TRUNCATE's
// new relfilenode — costs a full read that finds the same rows (engine.Resolve's
// digest), never a decision. In-place updates (VACUUM's relpages, relfrozenxid) keep
// xmin and ctid: they change nothing the snapshot reads.
//
// Every name is qualified with pg_catalog: the query may run on an application's
// session, whatever its search_path.
var FingerprintSQL = fingerprintSQL(FingerprintCatalogs)

// fingerprintWhere narrows a shared catalog to the rows that can reach this
// connector's sessions: pg_db_role_setting is one table for the whole cluster, and
// another database's or another role's defaults (ALTER DATABASE other SET …, ALTER
// ROLE other SET …) would move the fingerprint, and cost a full read, for nothing a
// session of this database and role can see.
var fingerprintWhere = map[string]string{
	"pg_db_role_setting": ` WHERE (pg_catalog.oideq(x.setdatabase, pg_catalog.oid(0))` +
		` OR pg_catalog.oideq(x.setdatabase, (SELECT d.oid FROM pg_catalog.pg_database d WHERE pg_catalog.nameeq(d.datname, pg_catalog.current_database()))))` +
		` AND (pg_catalog.oideq(x.setrole, pg_catalog.oid(0))` +
		` OR pg_catalog.oideq(x.setrole, (SELECT r.oid FROM pg_catalog.pg_roles r WHERE pg_catalog.nameeq(r.rolname, session_user))))`,
}

func fingerprintSQL(catalogs []string) string {
	parts := make([]string, len(catalogs))
	for i, c := range catalogs {
		parts[i] = `(SELECT pg_catalog.concat(pg_catalog.count(*), ':', pg_catalog.sum(pg_catalog.hashtidextended(x.ctid, pg_catalog.hashtextextended(pg_catalog.textin(pg_catalog.xidout(x.xmin)), 0)))) FROM pg_catalog.` + c + ` x` + fingerprintWhere[c] + `)`
	}
	return "SELECT pg_catalog.concat_ws(' ',\n  " + strings.Join(parts, ",\n  ") + ")"
}

// FingerprintRead is the fingerprint as one of a catalog read's queries (Reads): read
// in the snapshot of the rest, a later fingerprint equal to it means nothing the
// read saw has changed. FingerprintOf reads its rows.
func FingerprintRead() Read {
	return Read{What: "the catalog's fingerprint", SQL: FingerprintSQL, Columns: 1}
}

// FingerprintOf is the fingerprint in FingerprintRead's rows.
func FingerprintOf(rows [][]any) (string, error) {
	if len(rows) != 1 {
		return "", fmt.Errorf("pgcatalog: the fingerprint query returned %d rows", len(rows))
	}
	s, ok := rowString(rows[0])
	if !ok || s == "" {
		return "", fmt.Errorf("pgcatalog: the fingerprint query returned %v", rows[0])
	}
	return s, nil
}

// Fingerprint reads the catalog's fingerprint: equal answers, read in two statements,
// mean no catalog row the snapshot depends on changed between them.
func Fingerprint(ctx context.Context, query QueryFunc) (string, error) {
	rows, err := query(ctx, FingerprintSQL)
	if err != nil {
		return "", err
	}
	return FingerprintOf(rows)
}
