// Extension members and materialized views: what resolve: catalog reads so that
// everyday extension functions and REFRESH MATERIALIZED VIEW can be judged.

package pgcatalog

// ExtensionFunctionsSQL lists the routines that belong to an extension (pg_depend
// deptype 'e' on pg_extension). Columns: routine oid, extension name.
const ExtensionFunctionsSQL = `
SELECT d.objid::int8, e.extname::text
FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'`

// MatView is a materialized view with what a REFRESH of it runs: its query and its
// indexes' definitions (expressions and predicates are evaluated for every row).
type MatView struct {
	OID     uint32
	Schema  string
	Name    string
	Query   string   // pg_get_viewdef
	Indexes []string // pg_get_indexdef of each index
}

// MatViewsSQL lists the materialized views. Columns: oid, schema, name, query, the
// indexes' definitions as a JSON array.
var MatViewsSQL = `
SELECT c.oid::int8, n.nspname::text, c.relname::text, pg_get_viewdef(c.oid),
       coalesce((SELECT json_agg(pg_get_indexdef(i.indexrelid))::text FROM pg_index i WHERE i.indrelid = c.oid), '[]')
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'm' AND ` + userSchema("n")
