package cmdutil

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Flags is one subcommand's flag set. Errors are reported by Parse, in the
// subcommand's words, never by the flag package itself.
type Flags struct {
	*flag.FlagSet
	usage string // full help text, printed for --help
}

// NewFlags returns the flag set of the subcommand name; usage is its --help text,
// which the flags' defaults follow.
func NewFlags(name, usage string) *Flags {
	fs := flag.NewFlagSet("sqlfence "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{FlagSet: fs, usage: usage}
}

// Parse parses args, allowing flags after positional arguments (`check dir --format
// json`) until a `--`. It returns the positional arguments and, when parsing ends the
// command (--help or a bad flag), the exit code.
func (f *Flags) Parse(args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	for {
		err := f.FlagSet.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, f.usage)
			var defaults strings.Builder
			f.SetOutput(&defaults)
			f.PrintDefaults()
			f.SetOutput(io.Discard)
			// The flag package accepts -flag and --flag; show the GNU spelling.
			fmt.Fprint(stdout, strings.ReplaceAll("\n"+defaults.String(), "\n  -", "\n  --")[1:])
			return nil, ExitOK, true
		}
		if err != nil {
			return nil, f.UsageError(stderr, "%v", err), true
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

// UsageError reports a usage problem and returns the usage exit code.
func (f *Flags) UsageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", f.Name(), fmt.Sprintf(format, args...), f.Name())
	return ExitError
}
