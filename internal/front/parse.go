// Text that sqlfence's parser rejects: the server's own error, from a round trip
// that executes nothing.

package front

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ServerParse asks the server to read query, which sqlfence's parser rejected, and
// returns what the application would have seen without sqlfence: the server's own
// *pgconn.PgError when it rejects the text too, else refusal (SF320: the server reads
// text sqlfence cannot, so sqlfence cannot tell what it does).
//
// The text travels as the Parse message of the extended protocol, on the unnamed
// statement, with Describe and Sync (pgconn.PgConn.Prepare): the server parses and
// analyses it and executes nothing — no Bind, no Execute is ever sent, and the
// unnamed statement is replaced by the connection's next Parse, so there is nothing
// to deallocate. A text of several statements, which the simple protocol would run
// one after another, is one the server parsed whole before it refuses to prepare
// it: that too is refusal. In a transaction the server's error aborts it, as the
// statement itself would have.
//
// refusal is returned unchanged when pc is nil (a driver other than pgx, whose
// prepare sqlfence cannot prove executes nothing) or the text holds a NUL byte
// (which the protocol cannot carry).
func ServerParse(ctx context.Context, pc *pgconn.PgConn, query string, refusal error) error {
	if pc == nil || strings.IndexByte(query, 0) >= 0 {
		return refusal
	}
	_, err := pc.Prepare(ctx, "", query, nil)
	var pe *pgconn.PgError
	switch {
	case err == nil:
		return refusal
	case errors.As(err, &pe) && pe.Routine == "exec_parse_message":
		// "cannot insert multiple commands into a prepared statement": the server
		// parsed every statement of the text.
		return refusal
	case pe != nil:
		return pe
	}
	return err // the connection's own failure: nothing ran either
}
