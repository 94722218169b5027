//go:build cgo

package pgquery

import "github.com/pganalyze/pg_query_go/v6/parser"

// Build names the libpg_query build this binary parses with.
const Build = "cgo"

// Error is the parser's syntax error, with the cursor position in the text.
type Error = parser.Error

// ParseToProtobuf parses input and returns the tree in protobuf encoding.
func ParseToProtobuf(input string) ([]byte, error) { return parser.ParseToProtobuf(input) }

// ScanToProtobuf scans input and returns the tokens in protobuf encoding.
func ScanToProtobuf(input string) ([]byte, error) { return parser.ScanToProtobuf(input) }

// DeparseFromProtobuf turns a tree in protobuf encoding back into SQL.
func DeparseFromProtobuf(tree []byte) (string, error) { return parser.DeparseFromProtobuf(tree) }

// ParsePlPgSqlToJSON parses a CREATE FUNCTION statement's PL/pgSQL body into JSON.
func ParsePlPgSqlToJSON(input string) (string, error) { return parser.ParsePlPgSqlToJSON(input) }

// ParseToJSON parses input and returns the tree in JSON.
func ParseToJSON(input string) (string, error) { return parser.ParseToJSON(input) }

// Module and Name are the Go module whose parser this build calls, and its short name.
const (
	Name   = "pg_query_go"
	Module = "github.com/pganalyze/pg_query_go/v6"
)
