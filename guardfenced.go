// The guard's fence: a statement that carried its epoch to the guard (the writes its
// triggers, foreign-key actions, rules and functions make into protected tables;
// internal/engine/carry.go) fails with the driver's own fence codes when one of those
// rows is stale, and is reported as the driver reports its own fences.

package sqlfence

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlfence/sqlfence/internal/engine"
	"github.com/sqlfence/sqlfence/internal/rulecode"
)

// guardFenced is the guard's fence error (SQLSTATE SF101, SF110 or SF102 from its row
// trigger) as the driver's *Error, or nil for any other error. The guard raised it
// before the row was written, so the whole statement failed and wrote nothing;
// like the driver's fences it is not retryable with the same epoch.
func guardFenced(d *engine.Decision, query string, err error) error {
	var pe *pgconn.PgError
	if d == nil || !d.Carries() || !errors.As(err, &pe) {
		return nil
	}
	var stored, epoch int64
	storedKnown := true
	if _, serr := fmt.Sscanf(pe.Detail, "stored epoch %d, statement epoch %d", &stored, &epoch); serr != nil {
		storedKnown = false
		fmt.Sscanf(pe.Detail, "stored epoch none, statement epoch %d", &epoch) //nolint:errcheck // the epoch stays 0 when the detail says nothing
	}
	e := &Error{Kind: ErrFenced, Code: pe.Code, Table: d.CarriedTable(pe.SchemaName, pe.TableName), Epoch: epoch,
		StoredEpoch: stored, HasStored: storedKnown, Statement: query}
	where := "a row that the statement's triggers, foreign-key actions, rules or functions wrote (" + pe.SchemaName + "." + pe.TableName + ")"
	switch pe.Code {
	case rulecode.FencedRow:
		e.Reason = "the guard fenced the statement: " + where + " holds a newer epoch; nothing was written"
		e.Fix = "stop the handler and do not retry with this epoch: this execution was superseded, or (global epochs) another job's newer claim wrote the row; release the job so it runs again under a newer epoch"
	case rulecode.AlreadyWritten:
		e.Kind = ErrAlreadyWritten
		e.Reason = "the guard refused the statement: " + where + " was written by this epoch before, and strict mode allows one write per row per epoch; nothing was written"
		e.Fix = "use mode: repeatable for this table if this handler writes a row more than once (its triggers' writes count)"
	case rulecode.FencedClaim:
		e.Reason = "the guard fenced the statement: the claim it runs under was superseded (checked for " + where + "); nothing was written"
		e.Fix = "stop the handler and do not retry with this epoch; the newer claim finishes the job"
	default:
		return nil
	}
	return e
}
