// Package cmdutil holds what the sqlfence subcommands share: exit codes, flag
// parsing and usage errors, policy loading, connecting with a timeout, and output
// helpers.
package cmdutil

import (
	"fmt"
	"io"
	"strings"
)

// Exit codes shared by every subcommand.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // findings (check, audit, doctor), or the demo did not show the fence working
	ExitError    = 2 // usage, configuration or connection errors
)

// Fail reports an error that is not about usage (configuration, connection) and
// returns the error exit code.
func Fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sqlfence %s: %s\n", cmd, Message(cmd, err))
	return ExitError
}

// Message is err's text without the prefix the command's own line already carries:
// the library's errors start with "sqlfence: ", and some with the command's name.
func Message(cmd string, err error) string {
	s := err.Error()
	for _, p := range []string{"sqlfence " + cmd + ": ", cmd + ": ", "sqlfence: "} {
		if t, ok := strings.CutPrefix(s, p); ok {
			return t
		}
	}
	return s
}
