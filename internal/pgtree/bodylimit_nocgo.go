//go:build !cgo

package pgtree

// BodyLimit is the largest measure of a PL/pgSQL body sqlfence parses. The
// WebAssembly build of libpg_query (internal/pgtree/pgquery) runs on a 64 KiB stack
// in its linear memory, with no guard below it: PL/pgSQL's grammar nests deeper per
// level than SQL's, and 57 nested IFs (measure 365) overran that stack without an
// error, corrupting the parser instance for every later call. 160 keeps a factor of
// two; SQL, whose worst shapes stayed clean up to Limit, keeps Limit
// (TestWasmParserStaysClean).
const BodyLimit = 160
