//go:build cgo && unix

package pgtree

/*
#include <stddef.h>
int pgtree_start_worker(size_t stack_size);
*/
import "C"

import (
	"runtime"
	"sync"
)

// Deep texts are parsed on threads that C creates with a stack of bigStack bytes and
// that then call into Go for good (pgtreeStackWorker): a goroutine in a callback from
// C stays on its thread, and the cgo calls it makes run on that thread's stack. The
// workers start on first use, at most one per P up to 4, and stay.

// bigStackSupported reports whether runOnBigStack runs on a thread of its own.
const bigStackSupported = true

var bigWorkers struct {
	once sync.Once
	jobs chan func()
	ok   bool
}

//export pgtreeStackWorker
func pgtreeStackWorker() {
	for job := range bigWorkers.jobs {
		job()
	}
}

// runOnBigStack runs f on a worker thread and waits for it; without workers (the
// threads could not be created) it runs f on the calling thread, where the bound
// still holds on a default stack.
func runOnBigStack(f func()) {
	w := &bigWorkers
	w.once.Do(func() {
		w.jobs = make(chan func())
		for range min(runtime.GOMAXPROCS(0), 4) {
			if C.pgtree_start_worker(C.size_t(bigStack)) == 0 {
				w.ok = true
			}
		}
	})
	if !w.ok {
		f()
		return
	}
	done := make(chan any, 1)
	w.jobs <- func() {
		defer func() { done <- recover() }()
		f()
	}
	if p := <-done; p != nil {
		panic(p)
	}
}
