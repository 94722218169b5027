// Go packages (./..., import paths): checked by the Go analyzer, sqlfence-vet, run as
// a separate program so that the core module does not depend on golang.org/x/tools;
// its JSON is read back into check's findings.

package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlfence/sqlfence/internal/cli/cmdutil"
)

// vetTool is the analyzer's command, and the command that installs it.
const (
	vetTool    = "sqlfence-vet"
	vetInstall = "go install github.com/sqlfence/sqlfence/contrib/analyzer/cmd/sqlfence-vet@latest"
)

// isPackagePattern says whether a command-line argument names Go packages rather
// than a file or directory: a pattern with ... (./..., ./internal/..., example.com/x/...),
// or, when nothing of that name is on disk, an import path whose first element has a
// dot, as a module path's domain does (example.com/shop/db). Anything else is a path,
// so a mistyped directory is reported as missing, not sent to the analyzer.
func isPackagePattern(arg string) bool {
	if strings.Contains(arg, "...") {
		return true
	}
	if _, err := os.Stat(arg); err == nil {
		return false
	}
	first, _, _ := strings.Cut(filepath.ToSlash(arg), "/")
	return strings.Contains(first, ".") && !strings.HasPrefix(first, ".") && !filepath.IsAbs(arg) &&
		!strings.HasSuffix(arg, ".sql") && !strings.HasSuffix(arg, ".go")
}

// findVetTool returns the analyzer's path: --vettool, else sqlfence-vet next to this
// program (both installed by go install into the same directory), else on PATH.
func findVetTool(flag string) (string, error) {
	if flag != "" {
		if _, err := os.Stat(flag); err != nil {
			return "", fmt.Errorf("--vettool %s: %w", flag, err)
		}
		return flag, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), vetTool)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(vetTool); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("the Go analyzer %s, which checks Go packages, is neither on PATH nor next to sqlfence: install it with\n\t%s\nor give its path with --vettool", vetTool, vetInstall)
}

// vetRun is one run of the analyzer over Go packages.
type vetRun struct {
	tool       string
	patterns   []string
	policyPath string // as check loaded it; passed absolute
	dsn        string
	migrations string
	tests      bool
}

// vetDiagnostic is one report in the analysis framework's JSON (sqlfence-vet -json).
type vetDiagnostic struct {
	Category string `json:"category"`
	Posn     string `json:"posn"`
	End      string `json:"end"`
	Message  string `json:"message"`
}

// checkGoPackages runs the analyzer over the packages with check's policy and adds
// its reports to res as findings, and what it could not check as errors.
func checkGoPackages(ctx context.Context, v vetRun, res *result) {
	policy, err := filepath.Abs(v.policyPath)
	if err != nil {
		policy = v.policyPath
	}
	args := []string{"-json", "-policy", policy, "-test=" + strconv.FormatBool(v.tests)}
	if v.dsn != "" {
		args = append(args, "-dsn", v.dsn)
	}
	if v.migrations != "" {
		dir, err := filepath.Abs(v.migrations)
		if err != nil {
			dir = v.migrations
		}
		args = append(args, "-migrations", dir)
	}
	args = append(args, "--")
	args = append(args, v.patterns...)
	cmd := exec.CommandContext(ctx, v.tool, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	what := "Go packages " + strings.Join(v.patterns, " ")
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		res.Errors = append(res.Errors, fileError{File: what, Message: fmt.Sprintf("running %s: %v", v.tool, runErr)})
		return
	}
	// Load and type errors are printed on stderr (exit 1), one a line, often with a
	// position; the reports of the packages that loaded are still on stdout.
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			e := fileError{File: what, Message: line}
			if file, l, c, msg, ok := splitPosition(line); ok {
				e = fileError{File: cmdutil.RelPath(file), Line: l, Column: c, Message: msg}
			}
			res.Errors = append(res.Errors, e)
		}
	}
	if runErr != nil && stderr.Len() == 0 {
		res.Errors = append(res.Errors, fileError{File: what, Message: fmt.Sprintf("%s exited with status %d", v.tool, exit.ExitCode())})
	}
	if stdout.Len() == 0 {
		return
	}
	// {"package": {"sqlfence": [diagnostics] or {"error": "…"}}}; a package and its
	// test variant report the same files, so a report is kept once.
	var byPkg map[string]map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &byPkg); err != nil {
		res.Errors = append(res.Errors, fileError{File: what, Message: fmt.Sprintf("%s printed something that is not its JSON (%v); is it an older version? %s", v.tool, err, vetInstall)})
		return
	}
	pkgs := make([]string, 0, len(byPkg))
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	seen := map[string]bool{}
	files := map[string]*lines{}
	for _, pkg := range pkgs {
		for _, raw := range byPkg[pkg] {
			var failed struct{ Error string }
			if json.Unmarshal(raw, &failed) == nil && failed.Error != "" {
				if stderr.Len() > 0 && strings.HasPrefix(failed.Error, "analysis skipped due to errors") {
					continue // the errors are those on stderr, reported above
				}
				res.Errors = append(res.Errors, fileError{File: "Go package " + pkg, Message: failed.Error})
				continue
			}
			var diags []vetDiagnostic
			if err := json.Unmarshal(raw, &diags); err != nil {
				res.Errors = append(res.Errors, fileError{File: "Go package " + pkg, Message: fmt.Sprintf("%s's reports: %v", v.tool, err)})
				continue
			}
			for _, d := range diags {
				if key := d.Posn + "\x00" + d.Message; !seen[key] {
					seen[key] = true
					res.Findings = append(res.Findings, vetFinding(d, files))
				}
			}
		}
	}
}

// vetFinding converts a report: the position's byte column becomes check's column in
// code points, and the message loses the code it starts with (check prints it apart).
func vetFinding(d vetDiagnostic, files map[string]*lines) finding {
	f := finding{Rule: d.Category, Message: strings.TrimPrefix(d.Message, d.Category+": ")}
	file, line, col, _, ok := splitPosition(d.Posn)
	if !ok {
		f.File = d.Posn
		return f
	}
	f.File = cmdutil.RelPath(file)
	f.Line, f.Column = codePoints(files, file, line, col)
	if efile, eline, ecol, _, ok := splitPosition(d.End); ok && efile == file {
		f.EndLine, f.EndColumn = codePoints(files, file, eline, ecol)
	}
	return f
}

// splitPosition splits go/token's "file:line:col" (with an optional ": message"
// after it).
func splitPosition(s string) (file string, line, col int, msg string, ok bool) {
	rest := s
	if i := strings.Index(s, ": "); i >= 0 {
		rest, msg = s[:i], s[i+2:]
	}
	j := strings.LastIndexByte(rest, ':')
	if j < 0 {
		return "", 0, 0, "", false
	}
	i := strings.LastIndexByte(rest[:j], ':')
	if i < 0 {
		return "", 0, 0, "", false
	}
	line, err1 := strconv.Atoi(rest[i+1 : j])
	col, err2 := strconv.Atoi(rest[j+1:])
	if err1 != nil || err2 != nil || i == 0 {
		return "", 0, 0, "", false
	}
	return rest[:i], line, col, msg, true
}

// codePoints converts a 1-based byte column into check's column in code points.
func codePoints(files map[string]*lines, file string, line, col int) (int, int) {
	l, ok := files[file]
	if !ok {
		src, _ := os.ReadFile(file)
		l = newLines(src)
		files[file] = l
	}
	if line < 1 || line > len(l.start) {
		return line, col
	}
	return l.pos(l.start[line-1] + col - 1)
}
