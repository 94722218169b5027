//go:build !cgo

package sqlfence_test

// cgoParser: the engine parses with pg_query_go's cgo build (without cgo it is the
// WebAssembly build of the same parser, internal/pgtree/pgquery).
const cgoParser = false
