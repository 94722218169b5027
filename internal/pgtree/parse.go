// The only calls into pg_query's parser, each behind the bounds.

package pgtree

import (
	"fmt"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// Every text sqlfence hands to pg_query goes through the functions below, each of
// which checks the bound first: Parse and ParseScanned for SQL, ParsePlpgsql for a
// PL/pgSQL body, Deparse for a tree. Scan is the one pg_query call made directly:
// the scanner is a flex automaton that does not recurse, and its output is a flat
// list of tokens.
//
// A text whose measure is above directMeasure is parsed on a thread with a stack of
// its own (bigStack, where the platform allows it; see stack_cgo.go): the bound is
// chosen to hold on the default 8 MiB stack of the calling thread, and the big stack
// keeps it holding where threads get less (musl's 128 KiB, macOS's 512 KiB, glibc's
// 2 MiB under an unlimited stack rlimit).
const (
	// directMeasure: a tree at most 128 messages deep, about 23 KiB of stack, under a
	// quarter of the smallest default thread stack in use (musl's 128 KiB).
	directMeasure = 64
	// DeparseLimit bounds the depth, in messages, of a tree given to Deparse, which
	// uses 944 bytes of stack a message (Parse: 176): a 17th of what 8 MiB holds.
	DeparseLimit = 500
	// bigStack is the stack of the threads deep texts are parsed on.
	bigStack = 16 << 20
)

// Parse checks text against limit (Limit for text from outside, OutputLimit for
// text the rewrite made from such text) and parses it. A text past the limit is a
// *BoundsError.
func Parse(text string, limit int) (*pg.ParseResult, error) {
	toks, err := ScanTokens(text, nil)
	if err != nil {
		return nil, err
	}
	return ParseTokens(text, toks, limit)
}

// ParseTokens is Parse for text the caller has scanned with ScanTokens.
func ParseTokens(text string, tokens []Token, limit int) (*pg.ParseResult, error) {
	m, berr := MeasureTokens(text, tokens, false, limit)
	if berr != nil {
		return nil, berr
	}
	return parseTree(text, m)
}

// ParseScanned is Parse for text the caller has scanned already.
func ParseScanned(text string, tokens []*pg.ScanToken, limit int) (*pg.ParseResult, error) {
	m, berr := Measure(text, tokens, false, limit)
	if berr != nil {
		return nil, berr
	}
	return parseTree(text, m)
}

// parseTree parses text, of measure m, and decodes the tree (decode.go).
func parseTree(text string, m int) (*pg.ParseResult, error) {
	var out []byte
	var err error
	onStack(m, func() { out, err = pgquery.ParseToProtobuf(text) })
	if err != nil {
		return nil, err
	}
	return decodeTree(out)
}

// parseEncoded is Parse that returns the parser's protobuf output as it comes, for
// ParseMatches.
func parseEncoded(text string, limit int) (out []byte, err error) {
	toks, err := ScanTokens(text, nil)
	if err != nil {
		return nil, err
	}
	m, berr := MeasureTokens(text, toks, false, limit)
	if berr != nil {
		return nil, berr
	}
	onStack(m, func() { out, err = pgquery.ParseToProtobuf(text) })
	return out, err
}

// ParsePlpgsql parses the CREATE FUNCTION statement create, whose PL/pgSQL body is
// body, with pg_query's PL/pgSQL parser, and returns its JSON. Both texts are held
// to the bound: create to Limit as SQL, body to BodyLimit as PL/pgSQL (its
// statements nest too).
func ParsePlpgsql(create, body string) (out string, err error) {
	scan, err := pgquery.Scan(create)
	if err != nil {
		return "", err
	}
	mc, berr := Measure(create, scan.Tokens, false, Limit)
	if berr != nil {
		return "", berr
	}
	if scan, err = pgquery.Scan(body); err != nil {
		return "", err
	}
	mb, berr := Measure(body, scan.Tokens, true, BodyLimit)
	if berr != nil {
		return "", berr
	}
	onStack(max(mc, mb), func() { out, err = pgquery.ParsePlPgSqlToJSON(create) })
	return out, err
}

// Deparse turns a tree at most DeparseLimit messages deep back into SQL. A tree built
// in Go, without the parser's version, gets it.
func Deparse(tree *pg.ParseResult) (out string, err error) {
	if d := Depth(tree.ProtoReflect()); d > DeparseLimit {
		return "", fmt.Errorf("a tree %d deep, more than the %d sqlfence deparses", d, DeparseLimit)
	}
	if tree.Version == 0 {
		tree = &pg.ParseResult{Version: parserVersion(), Stmts: tree.Stmts}
	}
	onStack(directMeasure+1, func() { out, err = pgquery.Deparse(tree) })
	return out, err
}

// parserVersion is the version pg_query stamps on its trees and wants back.
var parserVersion = sync.OnceValue(func() int32 {
	tree, _ := pgquery.Parse("SELECT")
	return tree.GetVersion()
})

// onStack runs f, which calls pg_query on a text of measure m, on the calling
// thread when m is small and on a big stack otherwise.
func onStack(m int, f func()) {
	if m <= directMeasure {
		f()
		return
	}
	runOnBigStack(f)
}
