package sqlfence_test

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// atkOther runs an "other" step: text sent by another session, as a superuser on a
// plain pgx connection that sqlfence never sees (a migration, an operator's psql),
// in one simple-protocol message so that a SET it makes holds for the statements
// after it. Then it waits versionCheckBound, the time a connector is allowed before
// it sees DDL that moved no catalog version (catalog_replica_test.go): a statement
// sent after the pause is judged on the catalog as it now is.
func atkOther(ctx context.Context, dsn, text string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.PgConn().Exec(ctx, text).ReadAll(); err != nil {
		return err
	}
	select {
	case <-time.After(versionCheckBound):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
