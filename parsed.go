// Text sqlfence's parser rejects: the application sees the server's own error, as
// without sqlfence, and SF320 only when the server reads what sqlfence cannot.

package sqlfence

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// parseRefused is err unless err refuses, with SF320, text sqlfence's parser rejects
// and pc (the session's pgx connection; nil on another driver) can ask the server to
// parse it without executing it: then the server's *pgconn.PgError, or, when the
// server reads the text, the refusal saying so.
func parseRefused(ctx context.Context, pc *pgconn.PgConn, query string, err error) error {
	var e *Error
	if pc == nil || !errors.As(err, &e) || e.Code != rulecode.ParseError {
		return err
	}
	reads := *e
	reads.Reason += "; PostgreSQL reads the text, but sqlfence's parser (the grammar of PostgreSQL 17) does not, so sqlfence cannot tell what it does"
	reads.Fix = "write the statement in a form both read, or run it outside the driver (sqlfence.Unfenced with `unfenced: allow`)"
	return front.ServerParse(ctx, pc, query, &reads)
}
