package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sqlfence/sqlfence/outbox"
)

// receiver stands for the world outside the database: a service on loopback
// that applies each effect once per Idempotency-Key, as a payment API does,
// and fails every fifth key's first request, as services do.
type receiver struct {
	url string
	srv *http.Server

	mu       sync.Mutex
	requests map[string]int    // key → requests received
	applied  map[string]string // key → the payload applied, once
}

func startReceiver() (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{url: "http://" + l.Addr().String() + "/{topic}", requests: map[string]int{}, applied: map[string]string{}}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := r.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			panic(err)
		}
	}()
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	key := req.Header.Get(outbox.KeyHeader)
	if err != nil || key == "" {
		http.Error(w, "a request needs a body and an Idempotency-Key", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[key]++
	if r.requests[key] == 1 && len(r.requests)%5 == 0 {
		http.Error(w, "try again later", http.StatusServiceUnavailable)
		return
	}
	if _, dup := r.applied[key]; !dup { // the deduplication: once per key
		r.applied[key] = string(body)
	}
}

// counts returns the keys applied and the requests received.
func (r *receiver) counts() (applied, requests int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.requests {
		requests += n
	}
	return len(r.applied), requests
}

func (r *receiver) stop() { r.srv.Shutdown(context.Background()) }
