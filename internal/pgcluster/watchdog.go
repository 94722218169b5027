package pgcluster

// The watchdog cleans up after a Patroni harness whose process died without
// calling Stop (a panic, a test timeout, SIGKILL). Pdeathsig covers etcd and
// Patroni, this process's children, but not the postmasters: Patroni starts each
// in a new session through a helper process that exits at once, so a postmaster
// is nobody's child here (it belongs to init) and dies with nothing. Its
// backends exit by themselves once the postmaster is gone.
//
// The watchdog is a shell reading its stdin, a pipe from this process. The pipe
// reaches end of file when this process closes it (Stop) or dies; the shell then
// kills every postmaster named in the nodes' postmaster.pid files (checking the
// process's command line for the data directory first, in case the pid was
// reused) and deletes the harness's directory. It runs in its own process group
// so that a Ctrl-C meant for the tests does not kill it before it has done so.

import (
	"fmt"
	"io"
	"os/exec"
	"syscall"
)

const watchdogScript = `
cat >/dev/null
base="$1"; shift
for d in "$@"; do
	pid=$(head -n 1 "$d/postmaster.pid" 2>/dev/null) || continue
	[ -n "$pid" ] && grep -qaF -- "$d" "/proc/$pid/cmdline" 2>/dev/null && kill -9 "$pid"
done
rm -rf -- "$base"
`

type watchdog struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startWatchdog guards base and the postmasters of dataDirs.
func startWatchdog(base string, dataDirs []string) (*watchdog, error) {
	cmd := exec.Command("/bin/sh", append([]string{"-c", watchdogScript, "pgcluster-watchdog", base}, dataDirs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("pgcluster: watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgcluster: watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, stdin: stdin}, nil
}

// fire makes the watchdog do its work now and waits for it.
func (w *watchdog) fire() error {
	w.stdin.Close()
	return w.cmd.Wait()
}
