package version

import (
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/sqlfence/sqlfence/internal/cli/clitest"
	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	out, errOut, code := clitest.Run(t, Run)
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	// The pg_query_go module is v6, which bundles the PostgreSQL 17 parser. A test
	// binary's build information lists no dependencies, so the module versions are
	// pinned by the test of the built command (cmd/sqlfence), not here.
	want := regexp.MustCompile(`^sqlfence \S+\n(pg_query_go|go-pgquery) \S+ \((cgo|wasm)\), with the PostgreSQL 17\.\d+ parser\nbuilt with go\S+ for \S+/\S+\n$`)
	if !want.MatchString(out) {
		t.Errorf("sqlfence version printed:\n%s\nwant it to match %s", out, want)
	}

	out, errOut, code = clitest.Run(t, Run, "--help")
	clitest.WantCode(t, code, cmdutil.ExitOK, out, errOut)
	clitest.WantContains(t, "version --help", out, "Usage: sqlfence version", "Exit status")

	out, errOut, code = clitest.Run(t, Run, "extra")
	clitest.WantCode(t, code, cmdutil.ExitError, out, errOut)
	clitest.WantContains(t, "stderr", errOut, `unexpected argument "extra"`)
}

func TestParserVersion(t *testing.T) {
	t.Parallel()
	// pg_query_go v6.2.5 bundles libpg_query 17-6.2.5, whose PG_VERSION is 17.7.
	if got := parserVersion(); !regexp.MustCompile(`^17\.\d+$`).MatchString(got) {
		t.Errorf("parserVersion() = %q, want 17.x", got)
	}
	for n, want := range map[int]string{170007: "17.7", 160000: "16.0", 100023: "10.23", 90605: "9.6.5", 90400: "9.4.0"} {
		if got := formatVersionNum(n); got != want {
			t.Errorf("formatVersionNum(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestModuleVersion(t *testing.T) {
	t.Parallel()
	const pgq = "github.com/pganalyze/pg_query_go/v6"
	info := &debug.BuildInfo{
		Main: debug.Module{Path: "github.com/sqlfence/sqlfence", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "github.com/jackc/pgx/v5", Version: "v5.12.0"},
			{Path: pgq, Version: "v6.2.5"},
		},
	}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		path string
		want string
	}{
		{"main module from a checkout", info, "github.com/sqlfence/sqlfence", "(devel)"},
		{"a dependency", info, pgq, "v6.2.5"},
		{"not in the binary", info, "example.com/other", "unknown"},
		{"no build information", nil, pgq, "unknown"},
		{"main module without a version", &debug.BuildInfo{Main: debug.Module{Path: "m"}}, "m", "(devel)"},
		{"installed at a version", &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "v1.2.3"}}, "m", "v1.2.3"},
		{"a replaced dependency", &debug.BuildInfo{Deps: []*debug.Module{{Path: pgq, Version: "v6.2.5", Replace: &debug.Module{Path: "../pg_query_go"}}}}, pgq, "v6.2.5 => ../pg_query_go"},
		{"a dependency replaced by another version", &debug.BuildInfo{Deps: []*debug.Module{{Path: pgq, Version: "v6.2.5", Replace: &debug.Module{Path: "example.com/fork", Version: "v6.2.6"}}}}, pgq, "v6.2.5 => example.com/fork v6.2.6"},
	} {
		if got := moduleVersion(tc.info, tc.path); got != tc.want {
			t.Errorf("%s: moduleVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
