// The definitions of the views that show a column named like an epoch column: which
// column of the relation under a view its epoch column is, read from the view's query.

package pgcatalog

// View is a user view with a column named like one of the epoch columns asked for.
type View struct {
	Rel
	// Definition is pg_get_viewdef's SELECT: the view's query as the server keeps it,
	// every column named as the relation under it spells it, aliased where the view's
	// column is named otherwise.
	Definition string
}

// ViewsSQL lists the views outside the system schemas with a column named like one of
// the epoch columns in $1, a JSON array of names. Columns: oid, schema, name, relkind,
// pg_get_viewdef.
var ViewsSQL = `
SELECT c.oid::int8, n.nspname::text, c.relname::text, c.relkind::text, pg_get_viewdef(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND ` + userSchema("n") + `
  AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
              AND a.attname IN (SELECT jsonb_array_elements_text($1::text::jsonb)))`
