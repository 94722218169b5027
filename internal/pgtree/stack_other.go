//go:build !(cgo && unix)

package pgtree

// runOnBigStack runs f on the calling thread: without pthreads there is no thread
// whose stack sqlfence chooses, and the bound holds on a default stack.
func runOnBigStack(f func()) { f() }

// bigStackSupported reports whether runOnBigStack runs on a thread of its own.
const bigStackSupported = false
