// Package pgquery is the one place that chooses which build of libpg_query, the
// PostgreSQL parser extracted as a library, parses SQL for sqlfence:
//
//   - with cgo (CGO_ENABLED=1 and a C compiler, Go's default where one is found):
//     github.com/pganalyze/pg_query_go, libpg_query compiled by the machine's C
//     compiler and called through cgo;
//   - without (CGO_ENABLED=0, or no C compiler): github.com/wasilibs/go-pgquery, the
//     same libpg_query compiled to WebAssembly and run by wazero, a WebAssembly
//     runtime written in Go, so nothing but Go is needed to build sqlfence.
//
// Both hand back the same protobuf tree, pg_query_go's types (pg_query.ParseResult
// and the rest), so everything above this package is the same code under either
// build; TestParsersAgree in the root package parses every statement of the corpora,
// the attack suites and the benign corpus with both and compares the trees.
//
// The functions here apply no bound. The engine parses only through internal/pgtree,
// whose Parse measures a text before handing it over; this package is what pgtree
// calls, and what tests and the scanner's callers use (the scanner does not
// recurse).
package pgquery

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// Parse parses input into a tree (pg_query_go's Parse, in either build).
func Parse(input string) (*pg.ParseResult, error) {
	out, err := ParseToProtobuf(input)
	if err != nil {
		return nil, err
	}
	tree := &pg.ParseResult{}
	if err := proto.Unmarshal(out, tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// Scan runs the scanner over input (pg_query_go's Scan, in either build).
func Scan(input string) (*pg.ScanResult, error) {
	out, err := ScanToProtobuf(input)
	if err != nil {
		return nil, err
	}
	res := &pg.ScanResult{}
	if err := proto.Unmarshal(out, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Deparse turns tree back into SQL (pg_query_go's Deparse, in either build).
func Deparse(tree *pg.ParseResult) (string, error) {
	in, err := proto.Marshal(tree)
	if err != nil {
		return "", err
	}
	return DeparseFromProtobuf(in)
}
