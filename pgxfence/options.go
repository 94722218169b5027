// pgx's options: the leading arguments pgx reads as how to run a call rather than as
// values (conn.go's option loop in Exec, Query and SendBatch), taken off the front
// as pgx takes them, and the check that nothing else pgx would read as one reaches
// it.
//
// pgx reads options off the front of the argument list repeatedly, until the first
// argument that is not one: in Exec a QueryExecMode or a QueryRewriter, in Query
// also QueryResultFormats and QueryResultFormatsByOID, in a queued batch query a
// QueryRewriter only; of each kind the last wins. It reads them before it calls the
// rewriter, and never from what the rewriter returns. pgxfence calls the rewriter
// itself, to decide on the text it produces, and hands pgx that text with the
// arguments the rewriter returned; were the first of those an option, pgx would
// read it as one: another rewriter would replace the decided text, an exec mode
// would turn the simple protocol (client-side interpolation) back on. So what
// pgxfence hands pgx is checked to carry no option but its own (optionFree), and
// TestPgxOptionLoop proves split and optionFree against pgx's own loop, for the
// pgx versions TestPgxVersion pins.

package pgxfence

import (
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/front"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// options are pgx's leading option arguments of one call, which pgx reads off the
// front of the argument list (Conn.Exec: exec mode and rewriter; Conn.Query also
// the result formats).
type options struct {
	mode       pgx.QueryExecMode
	hasMode    bool
	rewriter   pgx.QueryRewriter
	formats    pgx.QueryResultFormats
	formatsOID pgx.QueryResultFormatsByOID
	hasFormats bool
}

// The calls whose leading options pgx reads differently.
const (
	forExec  = iota // exec mode, rewriter
	forQuery        // also the result formats
	forBatch        // a queued query: the rewriter only
)

// split separates the leading options from the application's arguments exactly as
// pgx does for the kind of call (the last of each kind wins).
func split(args []any, kind int) (options, []any) {
	var o options
	query := kind == forQuery
	for len(args) > 0 {
		switch a := args[0].(type) {
		case pgx.QueryExecMode:
			if kind == forBatch {
				return o, args
			}
			o.mode, o.hasMode = a, true
		case pgx.QueryRewriter:
			o.rewriter = a
		case pgx.QueryResultFormats:
			if !query {
				return o, args
			}
			o.formats, o.hasFormats = a, true
		case pgx.QueryResultFormatsByOID:
			if !query {
				return o, args
			}
			o.formatsOID, o.hasFormats = a, true
		default:
			return o, args
		}
		args = args[1:]
	}
	return o, args
}

// optionFree refuses a statement whose arguments, as pgxfence would hand them to
// pgx after its own options, begin with a value pgx reads as an option for the kind
// of call: only a rewriter's output can (split took the call's own options), so the
// value is one the rewriter returned.
func optionFree(c front.Call, kind int) error {
	if len(c.Args) == 0 {
		return nil
	}
	if _, rest := split(c.Args, kind); len(rest) == len(c.Args) {
		return nil
	}
	return &sqlfence.Error{Kind: sqlfence.ErrRefused, Code: rulecode.OptionArgument, Table: c.D.TableNames(), Statement: c.Query,
		Reason: fmt.Sprintf("the query rewriter returned arguments whose first, a %T, pgx reads as one of its options rather than as a value: pgx would then run another text, or in another exec mode, than the one sqlfence decided on", c.Args[0]),
		Fix:    "return only the statement's values from the rewriter; pass pgx's options (an exec mode, result formats, a rewriter) before it, among the call's own arguments"}
}
