package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence"
)

// defaultConnectTimeout bounds how long a subcommand waits for a server that does
// not answer.
const defaultConnectTimeout = 5 * time.Second

// flags is one subcommand's flag set. Errors are reported by parse, in the
// subcommand's words, never by the flag package itself.
type flags struct {
	*flag.FlagSet
	usage string // full help text, printed for --help
}

func newFlags(name, usage string) *flags {
	fs := flag.NewFlagSet("sqlfence "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flags{FlagSet: fs, usage: usage}
}

// parse parses args, allowing flags after positional arguments (`check dir --format
// json`) until a `--`. It returns the positional arguments and, when parsing ends the
// command (--help or a bad flag), the exit code.
func (f *flags) parse(args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, f.usage)
			var defaults strings.Builder
			f.SetOutput(&defaults)
			f.PrintDefaults()
			f.SetOutput(io.Discard)
			// The flag package accepts -flag and --flag; show the GNU spelling.
			fmt.Fprint(stdout, strings.ReplaceAll("\n"+defaults.String(), "\n  -", "\n  --")[1:])
			return nil, exitOK, true
		}
		if err != nil {
			return nil, f.usageError(stderr, "%v", err), true
		}
		rest := f.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), 0, false
		}
		if len(rest) == 0 {
			return pos, 0, false
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError reports a usage problem and returns the usage exit code.
func (f *flags) usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", f.Name(), fmt.Sprintf(format, args...), f.Name())
	return exitError
}

// fail reports an error that is not about usage (configuration, connection) and
// returns the error exit code.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sqlfence %s: %v\n", cmd, err)
	return exitError
}

// loadPolicy loads the policy named by --policy, or by SQLFENCE_POLICY when the flag
// is empty.
func loadPolicy(path string) (*sqlfence.Policy, error) {
	if path == "" {
		path = os.Getenv(sqlfence.PolicyEnv)
	}
	if path == "" {
		return nil, fmt.Errorf("no policy: give --policy PATH (for example --policy sqlfence.yaml) or set %s", sqlfence.PolicyEnv)
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("policy file %s does not exist; give the path of your sqlfence policy with --policy", path)
		}
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return sqlfence.LoadPolicy(path)
}

// connect opens one pgx connection with a bounded connect time, so that a server that
// does not answer is a clear error rather than a hang.
func connect(ctx context.Context, dsn string, timeout time.Duration) (*pgx.Conn, error) {
	if dsn == "" {
		return nil, errors.New("no database: give --dsn postgres://user@host:5432/dbname")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("bad --dsn: %w", err)
	}
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > timeout {
		cfg.ConnectTimeout = timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout+time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to %s within %v: %w", describeTarget(cfg), timeout, err)
	}
	return conn, nil
}

// describeTarget names the server a config points at, without its password.
func describeTarget(cfg *pgx.ConnConfig) string {
	host := cfg.Host
	if strings.HasPrefix(host, "/") {
		return fmt.Sprintf("database %q as %q on the socket in %s", cfg.Database, cfg.User, host)
	}
	return fmt.Sprintf("database %q as %q at %s:%d", cfg.Database, cfg.User, host, cfg.Port)
}

// withParam adds key=value to a DSN in URL or keyword/value form.
func withParam(dsn, key, value string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			q := u.Query()
			q.Set(key, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	v := strings.ReplaceAll(strings.ReplaceAll(value, `\`, `\\`), `'`, `\'`)
	return strings.TrimSpace(dsn) + " " + key + "='" + v + "'"
}

// quoteIdent quotes a PostgreSQL identifier unless PostgreSQL would read it back
// unchanged without quotes.
func quoteIdent(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '$')
	}
	if plain {
		if scan, err := pg.Scan(s); err == nil && len(scan.Tokens) == 1 && scan.Tokens[0].KeywordKind == pg.KeywordKind_NO_KEYWORD {
			return s
		}
	}
	return pgx.Identifier{s}.Sanitize()
}

// quoteLiteral quotes a PostgreSQL string literal (standard_conforming_strings on).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
