// Which user functions a call in attribute notation can reach: t.f is f(t) only when
// f takes one argument the row of t can be passed as, and t has no column f.

package pgcatalog

// AttributeCall says how a user function can be called in attribute notation.
type AttributeCall struct {
	OID uint32
	// Value: it takes one argument (the rest have defaults), so (x).f can call it.
	Value bool
	// Row: besides, the argument can be a table's row (a pseudo-type such as record or
	// anyelement, a domain, or a row type whose relation has no column named like the
	// function, where the column would win), so t.f can call it.
	Row bool
}

// AttributeCallsSQL lists the user functions, aggregates and window functions with
// what attribute notation reaches. Columns: oid, value, row.
var AttributeCallsSQL = `
SELECT p.oid::int8, x.value, coalesce(x.value AND (t.typtype IN ('p', 'd') OR t.typtype = 'c' AND NOT EXISTS (
           SELECT FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attname = p.proname AND a.attnum > 0 AND NOT a.attisdropped)), true)
FROM pg_proc p
JOIN pg_namespace n ON n.oid = p.pronamespace
CROSS JOIN LATERAL (SELECT p.pronargs >= 1 AND p.pronargs - p.pronargdefaults <= 1 AS value) x
LEFT JOIN pg_type t ON t.oid = p.proargtypes[0]
WHERE p.prokind <> 'p' AND ` + userSchema("n")
