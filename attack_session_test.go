package sqlfence_test

// The attack harness's session parts: a case's connections set up as a pool's
// AfterConnect would (--! afterconnect:), in an exec mode (--! mode:), batch steps
// (--! batch: statements separated by a line ";;", a pgx batch on the pgx front and
// one multi-statement text on the database/sql front), and rewriters whose returned
// arguments begin with pgx's options (rwargs=).

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
)

var atkModes = map[string]pgx.QueryExecMode{
	"cache_statement": pgx.QueryExecModeCacheStatement, "cache_describe": pgx.QueryExecModeCacheDescribe,
	"describe_exec": pgx.QueryExecModeDescribeExec, "exec": pgx.QueryExecModeExec, "simple_protocol": pgx.QueryExecModeSimpleProtocol,
}

func atkMode(name string) (pgx.QueryExecMode, error) {
	m, ok := atkModes[name]
	if !ok {
		return 0, fmt.Errorf("unknown exec mode %q", name)
	}
	return m, nil
}

// atkConfig applies a case's exec mode to a connection config.
func atkConfig(c *atkCase, cfg *pgx.ConnConfig) error {
	if c == nil || c.mode == "" {
		return nil
	}
	m, err := atkMode(c.mode)
	cfg.DefaultQueryExecMode = m
	return err
}

// atkAfterConnect runs a case's --! afterconnect: statements on each connection
// the database/sql front opens, before sqlfence sees it.
func atkAfterConnect(c *atkCase) []stdlib.OptionOpenDB {
	if len(c.afterConnect) == 0 {
		return nil
	}
	return []stdlib.OptionOpenDB{stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
		for _, q := range c.afterConnect {
			if _, err := conn.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})}
}

// atkOptionRewriter is a rewriter that returns text with the options named by
// opts before args: "rw" a rewriter to to (without arguments), an exec mode's name, "formats" and
// "formats_oid" result formats.
func atkOptionRewriter(text, to string, opts []string, args []any) pgx.QueryRewriter {
	var lead []any
	for _, o := range opts {
		switch o {
		case "rw":
			lead = append(lead, atkReturns{text: to}) // to, with none of the arguments after it
		case "formats":
			lead = append(lead, pgx.QueryResultFormats{pgx.TextFormatCode})
		case "formats_oid":
			lead = append(lead, pgx.QueryResultFormatsByOID{pgtype.Int4OID: pgx.TextFormatCode})
		default:
			if m, err := atkMode(o); err == nil {
				lead = append(lead, m)
			}
		}
	}
	return atkReturns{text: text, args: append(lead, args...)}
}

// atkReturns is a rewriter that returns a fixed text and arguments.
type atkReturns struct {
	text string
	args []any
}

func (r atkReturns) RewriteQuery(context.Context, *pgx.Conn, string, []any) (string, []any, error) {
	return r.text, r.args, nil
}

// atkBatch runs a batch step: on the pgx front one SendBatch of its statements,
// on the database/sql front the statements as one multi-statement text.
func atkBatch(ctx context.Context, conn *sql.Conn, text string) error {
	stmts := strings.Split(text, "\n;;\n")
	sent := false
	err := conn.Raw(func(dc any) error {
		bc, ok := dc.(*bridgeConn)
		if !ok {
			return nil
		}
		sent = true
		b := &pgx.Batch{}
		for _, q := range stmts {
			b.Queue(q)
		}
		return bc.fc.SendBatch(ctx, b).Close()
	})
	if sent || err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, strings.Join(stmts, ";\n"))
	return err
}
