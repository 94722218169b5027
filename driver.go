// The registered driver: sql.Open("sqlfence", dsn) reads the policy named in the DSN
// and wraps pgx's database/sql driver.

package sqlfence

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/sqlfence/sqlfence/internal/dsnparam"
	"github.com/sqlfence/sqlfence/internal/engine"
)

// DriverName is the name sqlfence registers with database/sql.
const DriverName = "sqlfence"

// GuardSetting is the session setting the registered driver sets on every connection.
// The triggers `sqlfence guard` installs let a write through only in a session that
// carries it, from a statement that starts with the comment sqlfence puts before every
// statement it fenced.
const GuardSetting = "sqlfence.fenced"

// PolicyParam is the DSN parameter that names the policy file; PolicyEnv the
// environment variable consulted when the DSN has none.
const (
	PolicyParam = dsnparam.Policy
	PolicyEnv   = "SQLFENCE_POLICY"
)

func init() {
	sql.Register(DriverName, Driver{})
}

// Driver wraps pgx's database/sql driver. It implements driver.DriverContext so that
// sql.Open reads and checks the policy at once: a missing or broken policy is an error
// from sql.Open, not from the first write.
type Driver struct{}

var (
	_ driver.Driver        = Driver{}
	_ driver.DriverContext = Driver{}
)

// Open opens one fenced connection for dsn. database/sql calls it only for drivers
// without OpenConnector; sqlfence has one, so Open reads the policy again on every
// call and is here for callers that use the driver directly.
func (d Driver) Open(dsn string) (driver.Conn, error) {
	c, err := d.OpenConnector(dsn)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector reads the policy (the DSN's sqlfence_policy parameter, else the
// SQLFENCE_POLICY environment variable), removes the parameter from the DSN, and
// returns a connector that fences every connection pgx opens for the rest of it. It
// fails when no policy is given or the policy is broken: sqlfence never runs unfenced.
// Each connection carries GuardSetting = on and standard_conforming_strings = on in
// its startup message.
//
// The rest of the DSN may also be a name stdlib.RegisterConnConfig returned, as with
// sql.Open("pgx", name): sql.Open("sqlfence", name+" sqlfence_policy=PATH"), or the
// name alone with SQLFENCE_POLICY. The registered config is used, with the startup
// parameters above added to it.
func (Driver) OpenConnector(dsn string) (driver.Connector, error) { return OpenConnector(dsn) }

// OpenConnector is [Driver.OpenConnector] with connector options ([WithObserver],
// [WithLogger], …), for programs that open the registered driver's connections with
// sql.OpenDB:
//
//	connector, err := sqlfence.OpenConnector(dsn, sqlfence.WithLogger(logger))
//	db := sql.OpenDB(connector)
func OpenConnector(dsn string, opts ...ConnectorOption) (driver.Connector, error) {
	path, innerDSN, err := dsnparam.Split(dsn)
	if err != nil {
		return nil, err
	}
	if path == "" {
		path = os.Getenv(PolicyEnv)
	}
	if path == "" {
		return nil, errors.New("sqlfence: no policy: add " + PolicyParam + "=PATH to the DSN or set " + PolicyEnv +
			"=PATH; sqlfence never runs without one (docs/policy.md gives the policy format)")
	}
	p, err := LoadPolicy(path)
	if err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(innerDSN)
	if err != nil {
		if registeredName(innerDSN) {
			return newConnector(&registeredConnector{name: innerDSN}, p, opts...)
		}
		return nil, fmt.Errorf("sqlfence: bad DSN (%w); write postgres://user@host/db?sqlfence_policy=PATH or host=HOST dbname=DB sqlfence_policy=PATH", err)
	}
	pinStartup(cfg)
	return newConnector(stdlib.GetConnector(*cfg), p, opts...)
}

// pinStartup sets the startup parameters every connection of the registered driver
// carries.
func pinStartup(cfg *pgx.ConnConfig) {
	// The session setting rides in the startup message, so it costs no round trip. It
	// tells the database-side guard (sqlfence guard) that writes on this connection
	// went through the fence; psql, migrations and scripts do not carry it.
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams[GuardSetting] = "on"
	// sqlfence parses statements as PostgreSQL does with standard-conforming strings
	// in UTF-8; pinning both here overrides a role or database default that changes
	// them (a multi-byte encoding such as SJIS has trailing bytes that read as a
	// backslash or a quote).
	cfg.RuntimeParams[engine.StandardStrings] = "on"
	cfg.RuntimeParams["client_encoding"] = "UTF8"
}

// registeredName reports whether a DSN pgx cannot parse is a single bare word, as the
// names stdlib.RegisterConnConfig returns are ("registeredConnConfig0").
func registeredName(dsn string) bool {
	return dsn != "" && !strings.ContainsAny(dsn, " \t\r\n='\"/:@?")
}

// registeredConnector opens the connections for a name stdlib.RegisterConnConfig
// returned, as sql.Open("pgx", name) would, but with sqlfence's startup parameters
// (pinStartup). pgx keeps registered configs to itself and resolves a name only when
// it connects, so the config is read back once, from the first connection pgx opens
// for the name (closed at once, before any statement), and every connection is then
// opened from that copy. A config registered again under the same name later is not
// seen by this handle.
type registeredConnector struct {
	name  string
	mu    sync.Mutex
	inner driver.Connector // pgx's connector for the pinned copy, once read
}

func (c *registeredConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.mu.Lock()
	inner := c.inner
	if inner == nil {
		cfg, err := c.read(ctx)
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		pinStartup(cfg)
		inner = stdlib.GetConnector(*cfg)
		c.inner = inner
	}
	c.mu.Unlock()
	return inner.Connect(ctx)
}

// read opens one connection through pgx's own resolution of the name and returns a
// copy of the config it was opened with.
func (c *registeredConnector) read(ctx context.Context) (*pgx.ConnConfig, error) {
	dc, ok := stdlib.GetDefaultDriver().(driver.DriverContext)
	if !ok {
		return nil, errors.New("sqlfence: pgx's driver has no OpenConnector")
	}
	pc, err := dc.OpenConnector(c.name)
	if err != nil {
		return nil, err
	}
	conn, err := pc.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	sc, ok := conn.(*stdlib.Conn)
	if !ok {
		return nil, fmt.Errorf("sqlfence: pgx opened a %T for %s", conn, c.name)
	}
	return sc.Conn().Config(), nil
}

func (c *registeredConnector) Driver() driver.Driver { return stdlib.GetDefaultDriver() }
