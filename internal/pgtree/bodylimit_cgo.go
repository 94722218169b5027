//go:build cgo

package pgtree

// BodyLimit is the largest measure of a PL/pgSQL body sqlfence parses. Under cgo it
// is Limit: the C stack holds PL/pgSQL's nesting as it holds SQL's (stack_test.go).
const BodyLimit = Limit
