// Package cmdutil holds what the sqlfence subcommands share: exit codes, flag
// parsing and usage errors, policy loading, connecting with a timeout, and output
// helpers.
package cmdutil

import (
	"fmt"
	"io"
)

// Exit codes shared by every subcommand.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // findings (check, audit), or the demo did not show the fence working
	ExitError    = 2 // usage, configuration or connection errors
)

// Fail reports an error that is not about usage (configuration, connection) and
// returns the error exit code.
func Fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "sqlfence %s: %v\n", cmd, err)
	return ExitError
}
