// Package pgxfence fences services that use pgx directly: a *pgxpool.Pool, a
// *pgx.Conn and the pgx.Tx they begin, with the same policy, decisions, checks and
// errors as sqlfence's database/sql driver.
//
// pgx has no hook that can change the text of every query (a QueryTracer sees it
// but cannot rewrite it), so the front is a wrapper with pgx's own method set:
// *Pool, *Conn and *Tx have pgx's signatures for Exec, Query, QueryRow, SendBatch,
// CopyFrom, Begin and BeginTx, and sqlc's generated New(db DBTX) accepts any of them.
//
//	pool, err := pgxfence.New(pgxPool, policy)
//	ctx = sqlfence.WithEpoch(ctx, claim.Epoch)
//	_, err = pool.Exec(ctx, `UPDATE inventory SET quantity = $1 WHERE sku = $2`, 9, "a")
//	if errors.Is(err, sqlfence.ErrFenced) { … }
//
// Every statement is decided on the text the server receives:
//
//   - Query rewriters (pgx.NamedArgs among them) are applied first, with no
//     connection, and the text they produce is decided; the arguments they return
//     are values, and one pgx would read as one of its options is refused
//     (options.go).
//   - Each statement of a batch is decided on its own, on the session's settings
//     and their defaults: a reset that would return a pinned setting to a default
//     other than its pinned value is refused before anything is sent.
//   - Under the simple protocol (QueryExecModeSimpleProtocol, per call or as the
//     connection's DefaultQueryExecMode) pgx would interpolate the arguments into the
//     text on the client, after the decision; a statement with arguments is sent with
//     QueryExecModeExec instead (see sendMode).
//   - SendBatch decides each queued statement on its own; CopyFrom into a protected
//     table stamps the epoch column on every row.
//
// Nothing hands out the unfenced pgx value behind a wrapper silently: Rows.Conn()
// and Tx.Conn() return nil, and Pool.Raw, Conn.Raw and Tx.Raw give the pgx value only
// under sqlfence.Unfenced(ctx, reason) with `unfenced: allow` in the policy.
package pgxfence
