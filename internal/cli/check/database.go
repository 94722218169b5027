// check --dsn: the policy checked against the database as the driver checks it
// before the first statement (resolve: catalog), and what the catalog holds that
// makes the driver refuse writes; each finding with its rule code.

package check

import (
	"context"
	"time"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// checkDatabase adds to res what Policy.CheckCatalog finds in the database at dsn:
// the policy's problems at their lines of the policy file, and the triggers, rules
// and foreign keys that make the driver refuse writes.
func checkDatabase(dsn, policyPath string, pol *sqlfence.Policy, res *result) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := cmdutil.Connect(ctx, dsn, 0)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	fs, err := pol.CheckCatalog(ctx, cmdutil.QueryFunc(conn))
	if err != nil {
		return err
	}
	for _, f := range fs {
		fd := finding{File: policyPath, Line: f.Line, Rule: f.Code, Table: f.Relation, Message: f.Message}
		if f.Kind != "policy" {
			fd.File = "database"
			fd.Message = f.Kind + " " + f.Name + ": " + f.Message
		}
		res.Findings = append(res.Findings, fd)
	}
	return nil
}
