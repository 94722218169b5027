package pgcatalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestReadPositionFallbacks: a role that may not read the control functions gets a
// position without the system identifier; a server that refuses a WAL or control
// function (a managed service, a revoked pg_control_checkpoint on a standby) gets
// one with no timeline, never an error; a lost connection is an error.
func TestReadPositionFallbacks(t *testing.T) {
	ctx := context.Background()
	row := []any{"7", false, int64(2), "0/3000060", "on", "origin", "standard_conforming_strings=off,client_encoding=UTF8"}
	for _, c := range []struct {
		name    string
		refuse  map[string]string // query prefix → SQLSTATE
		lost    bool
		want    Position
		wantErr bool
	}{
		{name: "all readable", want: Position{System: "7", Timeline: 2, LSN: 0x3000060}},
		{name: "control functions revoked", refuse: map[string]string{"SELECT (SELECT s.system_identifier": insufficientPrivs},
			want: Position{Timeline: 2, LSN: 0x3000060}},
		{name: "WAL functions refused", refuse: map[string]string{"SELECT (SELECT s.system_identifier": "0A000"}, want: Position{}},
		{name: "revoked, then refused", refuse: map[string]string{"SELECT (SELECT s.system_identifier": insufficientPrivs, "SELECT NULL::text, pg_catalog.pg_is_in_recovery(),\n": "42501"}, want: Position{}},
		{name: "connection lost", lost: true, wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			query := func(ctx context.Context, sql string, args ...any) ([][]any, error) {
				if c.lost {
					return nil, errors.New("unexpected EOF")
				}
				for prefix, code := range c.refuse {
					if strings.HasPrefix(sql, prefix) {
						return nil, &pgconn.PgError{Code: code, Message: "refused"}
					}
				}
				if strings.HasPrefix(sql, positionUnknownSQL) {
					return [][]any{{nil, false, int64(0), nil, "on", "origin", "standard_conforming_strings=off,client_encoding=UTF8"}}, nil
				}
				r := append([]any(nil), row...)
				if strings.HasPrefix(sql, "SELECT NULL::text") {
					r[0] = nil
				}
				return [][]any{r}, nil
			}
			s, err := ReadSession(ctx, query)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && (s.Position != c.want || s.SynchronousCommit != "on" || s.ReplicationRole != "origin" || s.Defaults["standard_conforming_strings"] != "off" || s.Defaults["client_encoding"] != "UTF8") {
				t.Errorf("got %+v, want %+v", s, c.want)
			}
		})
	}
}
