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
// and foreign keys that make the driver refuse writes. With migrations, the database
// is an empty scratch one, and what is checked is the schema the migrations of that
// directory make there, in a transaction that closing the connection rolls back.
func checkDatabase(dsn, migrations, policyPath string, pol *sqlfence.Policy, res *result) error {
	var ms []cmdutil.Migration
	if migrations != "" {
		var err error
		if ms, err = cmdutil.ReadMigrations(migrations); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := cmdutil.Connect(ctx, dsn, 0)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if ms != nil {
		if err := cmdutil.ApplyMigrations(ctx, conn, migrations, ms); err != nil {
			return err
		}
	}
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
