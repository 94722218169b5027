//go:build !cgo

package pgquery

import (
	"runtime"

	"github.com/wasilibs/go-pgquery/parser"
)

// Build names the libpg_query build this binary parses with.
const Build = "wasm"

// Error is the parser's syntax error, with the cursor position in the text.
type Error = parser.Error

// slots bounds the calls into the WebAssembly parser that run at once to the
// processors Go runs on. go-pgquery keeps a pool of module instances and makes a new
// one whenever a call finds the pool empty, each in a runtime of its own that
// compiles the 2.2 MB module again: 3–4 s of CPU on the 2-core VM, 18 s under load.
// Unbounded, goroutines that parsed at once each paid a compile (four at once
// measured 11.5 s against 4.1 s for one); one at a time, a test suite that parses in
// parallel ran slower (internal/engine: 483 s, 337 s in a run before). Bounded by
// GOMAXPROCS, a process compiles the module at most that many times, and parses on
// every core it has.
var slots = make(chan struct{}, runtime.GOMAXPROCS(0))

func take() { slots <- struct{}{} }
func give() { <-slots }

// ParseToProtobuf parses input and returns the tree in protobuf encoding.
func ParseToProtobuf(input string) ([]byte, error) {
	take()
	defer give()
	return parser.ParseToProtobuf(input)
}

// ScanToProtobuf scans input and returns the tokens in protobuf encoding.
func ScanToProtobuf(input string) ([]byte, error) {
	take()
	defer give()
	return parser.ScanToProtobuf(input)
}

// DeparseFromProtobuf turns a tree in protobuf encoding back into SQL.
func DeparseFromProtobuf(tree []byte) (string, error) {
	take()
	defer give()
	return parser.DeparseFromProtobuf(tree)
}

// ParsePlPgSqlToJSON parses a CREATE FUNCTION statement's PL/pgSQL body into JSON.
func ParsePlPgSqlToJSON(input string) (string, error) {
	take()
	defer give()
	return parser.ParsePlPgSqlToJSON(input)
}

// ParseToJSON parses input and returns the tree in JSON.
func ParseToJSON(input string) (string, error) {
	take()
	defer give()
	return parser.ParseToJSON(input)
}

// Module and Name are the Go module whose parser this build calls, and its short name.
const (
	Name   = "go-pgquery"
	Module = "github.com/wasilibs/go-pgquery"
)
