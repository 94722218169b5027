// Package version is `sqlfence version`: the version of sqlfence, of the module it
// parses SQL with (pg_query_go under cgo, go-pgquery without; see
// internal/pgtree/pgquery), and of the PostgreSQL parser that module bundles.
package version

import (
	"fmt"
	"io"
	"reflect"
	"runtime"
	"runtime/debug"

	"github.com/sqlfence/sqlfence"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

const usage = `Usage: sqlfence version

Prints the version of sqlfence, of the module it parses SQL with (pg_query_go built
with cgo, go-pgquery — the same parser in WebAssembly — built without), and
of the PostgreSQL parser that module bundles: the parser decides which statements
sqlfence check and the driver understand. Installed with go install at a released
version, sqlfence reports that version; built from a source checkout, it reports
(devel), or a pseudo-version naming the commit when the go command stamps version
control information into the binary.

Exit status: 0 success, 2 usage error.
`

// sqlfence's module path, taken from the package itself (its root package); the
// parser's is pgquery.Module, which names the build this binary links.
var sqlfenceModule = reflect.TypeFor[sqlfence.Policy]().PkgPath()

// Run is sqlfence version.
func Run(args []string, stdout, stderr io.Writer) int {
	f := cmdutil.NewFlags("version", usage)
	pos, code, done := f.Parse(args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) > 0 {
		return f.UsageError(stderr, "unexpected argument %q", pos[0])
	}
	info, _ := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "sqlfence %s\n", moduleVersion(info, sqlfenceModule))
	fmt.Fprintf(stdout, "%s %s (%s), with the PostgreSQL %s parser\n", pgquery.Name, moduleVersion(info, pgquery.Module), pgquery.Build, parserVersion())
	fmt.Fprintf(stdout, "built with %s for %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return cmdutil.ExitOK
}

// moduleVersion is the version of module path in the binary's build information:
// "(devel)" for the main module built from a checkout without version control
// stamping, "unknown" when the binary has no build information or does not list the
// module (a test binary lists no dependencies).
func moduleVersion(info *debug.BuildInfo, path string) string {
	if info == nil {
		return "unknown"
	}
	if info.Main.Path == path {
		if info.Main.Version == "" {
			return "(devel)"
		}
		return info.Main.Version
	}
	for _, d := range info.Deps {
		if d.Path != path {
			continue
		}
		if r := d.Replace; r != nil {
			if r.Version != "" {
				return d.Version + " => " + r.Path + " " + r.Version
			}
			return d.Version + " => " + r.Path
		}
		return d.Version
	}
	return "unknown"
}

// parserVersion is the PostgreSQL version whose parser pg_query bundles. pg_query_go
// has no Go constant for it: the C headers define PG_VERSION ("17.7") and
// PG_VERSION_NUM (170007), out of reach of Go code, and the module version (v6.2.5,
// libpg_query 17-6.2.5) names only the major version. But libpg_query stamps
// PG_VERSION_NUM into every scan and parse result it returns, so scanning an empty
// string reads it from the linked parser itself.
func parserVersion() string {
	res, err := pgquery.Scan("")
	if err != nil || res.GetVersion() <= 0 {
		return "(unknown version)"
	}
	return formatVersionNum(int(res.GetVersion()))
}

// formatVersionNum spells a PostgreSQL version number (server_version_num,
// PG_VERSION_NUM) as PostgreSQL does: 170007 is 17.7, and before 10 the scheme had
// three parts, 90605 being 9.6.5.
func formatVersionNum(n int) string {
	if n >= 100000 {
		return fmt.Sprintf("%d.%d", n/10000, n%10000)
	}
	return fmt.Sprintf("%d.%d.%d", n/10000, n/100%100, n%100)
}
