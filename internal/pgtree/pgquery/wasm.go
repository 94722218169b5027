//go:build !cgo

package pgquery

import (
	"sync"

	"github.com/wasilibs/go-pgquery/parser"
)

// Build names the libpg_query build this binary parses with.
const Build = "wasm"

// Error is the parser's syntax error, with the cursor position in the text.
type Error = parser.Error

// one makes the calls into the WebAssembly parser one at a time. go-pgquery keeps a
// pool of module instances and makes a new one whenever a call finds the pool empty,
// each in a runtime of its own that compiles the 2.2 MB module again: 3–4 s of CPU
// on the 2-core VM, 18 s under load. Calls made at once by goroutines that had not
// parsed before thus each paid a compile (four at once measured 11.5 s against 4.1 s
// for one). Taken one at a time, a process compiles the module once, on its first
// call, and every later call reuses that instance; a parse takes well under a
// millisecond after it, and only first sights parse.
var one sync.Mutex

// ParseToProtobuf parses input and returns the tree in protobuf encoding.
func ParseToProtobuf(input string) ([]byte, error) {
	one.Lock()
	defer one.Unlock()
	return parser.ParseToProtobuf(input)
}

// ScanToProtobuf scans input and returns the tokens in protobuf encoding.
func ScanToProtobuf(input string) ([]byte, error) {
	one.Lock()
	defer one.Unlock()
	return parser.ScanToProtobuf(input)
}

// DeparseFromProtobuf turns a tree in protobuf encoding back into SQL.
func DeparseFromProtobuf(tree []byte) (string, error) {
	one.Lock()
	defer one.Unlock()
	return parser.DeparseFromProtobuf(tree)
}

// ParsePlPgSqlToJSON parses a CREATE FUNCTION statement's PL/pgSQL body into JSON.
func ParsePlPgSqlToJSON(input string) (string, error) {
	one.Lock()
	defer one.Unlock()
	return parser.ParsePlPgSqlToJSON(input)
}

// ParseToJSON parses input and returns the tree in JSON.
func ParseToJSON(input string) (string, error) {
	one.Lock()
	defer one.Unlock()
	return parser.ParseToJSON(input)
}

// Module and Name are the Go module whose parser this build calls, and its short name.
const (
	Name   = "go-pgquery"
	Module = "github.com/wasilibs/go-pgquery"
)
