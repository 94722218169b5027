package pgcluster

// The one-member etcd that Patroni keeps its leader key in.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

type etcd struct {
	srv  *server
	port int // client port; the peer port is only etcd's own business
}

// startEtcd starts etcd with its data in dir on the given loopback ports and
// waits until it is healthy. It runs as this process's user: etcd, unlike
// postgres, does not mind root.
func startEtcd(ctx context.Context, bin, dir string, clientPort, peerPort int) (*etcd, error) {
	attr, err := sysProcAttr(nil)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	defer logFile.Close()
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cmd := exec.Command(bin,
		"--name", "etcd0",
		"--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client,
		"--advertise-client-urls", client,
		"--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd0="+peer,
		"--initial-cluster-state", "new",
		"--logger", "zap",
		"--log-level", "warn",
	)
	cmd.Dir, cmd.SysProcAttr = dir, attr
	cmd.Stdout, cmd.Stderr = logFile, logFile
	srv, err := startServer(cmd)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: start etcd: %w", err)
	}
	e := &etcd{srv: srv, port: clientPort}
	err = poll(ctx, "etcd healthy", 50*time.Millisecond, func(ctx context.Context) (bool, error) {
		if !srv.running() {
			return false, fmt.Errorf("etcd exited: %v", srv.err)
		}
		var h struct{ Health string }
		status, err := getJSON(ctx, client+"/health", &h)
		return err == nil && status == http.StatusOK && h.Health == "true", err
	})
	if err != nil {
		e.kill()
		log, _ := os.ReadFile(filepath.Join(dir, "etcd.log"))
		return nil, fmt.Errorf("%w\n%s", err, tail(log))
	}
	return e, nil
}

func (e *etcd) kill() {
	e.srv.cmd.Process.Signal(syscall.SIGKILL)
	<-e.srv.exited
}

// httpClient talks to etcd and Patroni's REST APIs. Its short timeout matters
// with frozen nodes, whose kernel accepts the connection but nobody answers.
var httpClient = &http.Client{Timeout: time.Second, Transport: &http.Transport{
	DialContext:       (&net.Dialer{Timeout: time.Second}).DialContext,
	DisableKeepAlives: true, // a kept connection would outlive the process it went to
}}

// getJSON GETs url and decodes a JSON body into v (when there is one); it
// returns the HTTP status.
func getJSON(ctx context.Context, url string, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			return resp.StatusCode, fmt.Errorf("%s: %w", url, err)
		}
	}
	return resp.StatusCode, nil
}

// freePorts returns n distinct free loopback ports, all held at once while
// being picked so that none is handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pgcluster: find a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
