// The extended protocol for every statement with arguments: pgx's simple protocol
// splices the arguments into the text on the client, after sqlfence decided it.

package sqlfence

import (
	"database/sql/driver"

	"github.com/jackc/pgx/v5"
)

// extendedArgs returns the arguments to send to inner so that the server receives the
// text sqlfence decided and the arguments apart from it. Under pgx's simple protocol
// (default_query_exec_mode=simple_protocol in the DSN, or a leading
// pgx.QueryExecModeSimpleProtocol argument) pgx interpolates the arguments into the
// text with a lexer of its own; where that lexer and the server's disagree (e' after
// an identifier, as in name'\'), a placeholder the server reads inside a string is
// replaced, the argument's quotes end the string, and the argument's text runs as
// statements. So a statement with arguments goes with pgx.QueryExecModeExec instead:
// one round trip, an unnamed statement (fine behind PgBouncer), and the behaviour pgx
// documents the simple protocol to have. Statements without arguments are sent as
// they are: with nothing to interpolate, the simple protocol sends the text unchanged.
// For drivers other than pgx args are returned as they are.
func extendedArgs(inner driver.Conn, args []driver.NamedValue) []driver.NamedValue {
	if len(args) == 0 {
		return args
	}
	pgxConn, mode := defaultMode(inner)
	if !pgxConn {
		return args
	}
	return extendedArgsFor(mode, args)
}

// defaultMode reports whether inner is a pgx connection, and its default exec mode.
// pgx hands out its config only as a copy, so a connection reads it once (conn.mode).
func defaultMode(inner driver.Conn) (bool, pgx.QueryExecMode) {
	pc, ok := inner.(interface{ Conn() *pgx.Conn })
	if !ok || pc.Conn() == nil {
		return false, 0
	}
	return true, pc.Conn().Config().DefaultQueryExecMode
}

// extendedArgsFor is extendedArgs for a pgx connection whose default exec mode is mode.
func extendedArgsFor(mode pgx.QueryExecMode, args []driver.NamedValue) []driver.NamedValue {
	if len(args) == 0 {
		return args
	}
	// pgx reads its options from the front of the arguments; the last exec mode wins.
	lead, modes := 0, 0
	for ; lead < len(args); lead++ {
		switch v := args[lead].Value.(type) {
		case pgx.QueryExecMode:
			mode = v
			modes++
			continue
		case pgx.QueryResultFormats, pgx.QueryResultFormatsByOID, pgx.QueryRewriter:
			continue
		}
		break
	}
	if mode != pgx.QueryExecModeSimpleProtocol || lead == len(args) {
		return args
	}
	out := make([]driver.NamedValue, 0, len(args)+1)
	if modes == 0 {
		out = append(out, driver.NamedValue{Value: pgx.QueryExecModeExec})
	}
	for i, a := range args {
		if _, ok := a.Value.(pgx.QueryExecMode); ok && i < lead {
			a.Value = pgx.QueryExecModeExec
		}
		out = append(out, a)
	}
	for i := range out {
		out[i].Ordinal = i + 1
	}
	return out
}
