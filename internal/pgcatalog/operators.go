// The user operators: an operator is a function call in operator syntax, so the
// function behind each is judged like a call of it.

package pgcatalog

// Operator is a user operator and the function it calls.
type Operator struct {
	OID    uint32
	Schema string
	Name   string
	// Function is pg_operator.oprcode, in FuncSchema (pg_catalog for a built-in).
	Function   uint32
	FuncSchema string
	FuncName   string
}

// OperatorsSQL lists the operators outside the system schemas. Columns: oid, schema,
// name, function oid, function schema, function name.
var OperatorsSQL = `
SELECT o.oid::int8, n.nspname::text, o.oprname::text, p.oid::int8, pn.nspname::text, p.proname::text
FROM pg_operator o
JOIN pg_namespace n ON n.oid = o.oprnamespace
JOIN pg_proc p ON p.oid = o.oprcode
JOIN pg_namespace pn ON pn.oid = p.pronamespace
WHERE ` + userSchema("n")
