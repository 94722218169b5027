// Pinned settings: the server reads statement text as sqlfence parsed it only while
// standard_conforming_strings is on and client_encoding is UTF8.

package sqlfence

import (
	"database/sql/driver"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// statusOf returns how an inner pgx connection tells the server's reported settings
// (PgConn.ParameterStatus), or nil for other drivers, for which only what the
// allowlist refuses keeps the settings (and the registered driver's startup message
// pins them). PostgreSQL reports both pinned settings (ParameterStatus) at connect and
// whenever they change, by whatever route: SET, a function's SET clause, a role or
// database default.
func statusOf(ic driver.Conn) func(string) string {
	if c, ok := ic.(interface{ Conn() *pgx.Conn }); ok && c.Conn() != nil {
		return c.Conn().PgConn().ParameterStatus
	}
	return nil
}

// pgxConnOf is ic's pgx connection, nil on another driver.
func pgxConnOf(ic driver.Conn) *pgx.Conn {
	if c, ok := ic.(interface{ Conn() *pgx.Conn }); ok {
		return c.Conn()
	}
	return nil
}

// checkPinned reports a session whose server reads text differently from sqlfence: the
// last line of defence behind the allowlist, checked before every statement at the cost
// of two map lookups. A connection that fails it is not used again.
func checkPinned(status func(string) string) *Error {
	if status == nil {
		return nil
	}
	why := ""
	switch {
	case status(engine.StandardStrings) != "on":
		why = "standard_conforming_strings is " + status(engine.StandardStrings) + ": the server reads a backslash inside '…' as an escape"
	case !strings.EqualFold(status("client_encoding"), "UTF8"):
		why = "client_encoding is " + status("client_encoding") + ": in a multi-byte encoding a character's trailing byte can read as a backslash or a quote"
	default:
		return nil
	}
	return &Error{Kind: ErrRefused, Code: rulecode.SessionSettings, Reason: "the session's " + why + ", so the server would read statements differently from sqlfence (a role or database default, or a change made where sqlfence could not see it)",
		Fix: "keep standard_conforming_strings = on and client_encoding = UTF8: the registered driver sets both in the startup message; with your own connector set them in its startup parameters, and remove role or database defaults that change them"}
}
