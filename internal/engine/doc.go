// Package engine is sqlfence's analysis: one SQL text and a compiled policy in, a
// decision out — send the text unchanged, send it with the fence inserted (and the
// epoch, and under a claim the claim's key, as parameters), refuse it with a rule code
// and a message, or send it only from the claim helpers — and, after a fenced write,
// what its result means.
//
// # The way through
//
// A statement passes the stages in one direction, each in its own file: the cache and
// decisions by shape (engine.go, cache.go, shape.go); the size, NUL and marker checks,
// the scan, and the parse behind the parser's bounds (analyze.go, internal/pgtree); the
// allowlist (allowlist.go, with functions.go, body.go, settings.go, ddl.go); the writes
// to protected and claim tables (protected.go); the plan for each write (rewrite.go,
// rewrite_insert.go, rewrite_merge.go, claimcheck.go) placed by the token editor
// (edit.go) as the fence's text and nodes (fencetext.go); the verification of the result
// (verify.go); and the query that explains a write that affected no rows (zerorows.go,
// run by a front through explain.go). With resolve: catalog, resolve.go reads the
// catalog and catalog*.go judge from it.
//
// # Why a package of its own
//
// Inside one package every file may call every other; the analysis grew up beside the
// database/sql driver, and a reader could not tell which files were whose. As a
// package the engine can be reached only through what it exports: [Engine], [Analyze],
// [Decision], [Bound], [Resolve] and the compiled [Policy]. Two fronts call it — the
// database/sql driver in the root package and pgxfence — through internal/front, and
// neither can reach past it.
//
// The engine has its own compiled [Policy], [Table], [QualifiedName] and [Error]
// rather than the root package's. The root's types are the public API, and the engine
// cannot import the root package (the root imports the engine); moving the public
// types here and aliasing them from the root would put this package's names into the
// public documentation. The root compiles its Policy into this one once per connector
// (the copy it always took) and converts each *Error field for field, so the cost is
// paid where it always was, and the public API did not change.
//
// The engine talks to no database and reads no context: what a statement's context
// says arrives as a [Session], and the queries it needs answered (the catalog, the
// 0-row classification, a claim's row) go through the [Querier] a front hands it.
package engine
