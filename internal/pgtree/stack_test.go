package pgtree

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/sqlfence/sqlfence/internal/pgtree/pgquery"
)

// The stack pg_query needs is measured in child processes: the test binary runs
// itself (TestStackChild) under `ulimit -s`, which sets both the main thread's stack
// and glibc's default for new threads, and parses one input; a crash kills the child,
// not the test.

const stackChildEnv = "PGTREE_STACK_CHILD"

// TestStackChild is the child: PGTREE_STACK_CHILD=op:where:shape:n, op one of parse,
// deparse, plpgsql, where one of direct (the calling goroutine's thread) or big
// (runOnBigStack). It prints "ok", or "error: …" when pg_query refuses the input.
func TestStackChild(t *testing.T) {
	spec := os.Getenv(stackChildEnv)
	if spec == "" {
		t.Skip("only run as a child of the stack tests")
	}
	parts := strings.Split(spec, ":")
	op, where, name := parts[0], parts[1], parts[2]
	n, _ := strconv.Atoi(parts[3])
	s := shapeNamed(name)
	run := func(f func()) { f() }
	if where == "big" {
		run = runOnBigStack
	}
	var err error
	switch op {
	case "parse":
		// The C half of pg.Parse: the Go half, protobuf's unmarshalling, refuses
		// trees over 10,000 messages deep with an error, on a stack that grows.
		run(func() { _, err = pgquery.ParseToProtobuf(s.gen(n)) })
	case "plpgsql":
		run(func() { _, err = pgquery.ParsePlPgSqlToJSON(plpgsqlFunction(s.gen(n))) })
	case "deparse":
		var tree *pg.ParseResult
		runOnBigStack(func() { tree, err = pgquery.Parse(s.gen(n)) })
		if err == nil {
			run(func() { _, err = pgquery.Deparse(tree) })
		}
	}
	if err != nil {
		fmt.Println("error:", err)
	} else {
		fmt.Println("ok")
	}
}

func shapeNamed(name string) shape {
	for _, s := range shapes {
		if s.name == name {
			return s
		}
	}
	panic("no shape " + name)
}

// stackChild runs the child with a stack of kib KiB and returns "ok", "error" (pg_query
// refused the input: the grammar's own stack limit, "memory exhausted") or "crash".
func stackChild(t *testing.T, kib int, op, where, shape string, n int) (string, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -s %d && exec "$0" -test.run='^TestStackChild$' -test.v`, kib), os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%s:%s:%d", stackChildEnv, op, where, shape, n))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil && strings.Contains(string(out), "\nok\n"):
		return "ok", ""
	case err == nil && strings.Contains(string(out), "\nerror: "):
		_, msg, _ := strings.Cut(string(out), "\nerror: ")
		msg, _, _ = strings.Cut(msg, "\n")
		return "error", msg
	case strings.Contains(string(out), "ulimit"):
		t.Skipf("cannot set the stack size: %s", out)
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "crash", ws.Signal().String()
		}
		if strings.Contains(string(out), "SIGSEGV") || strings.Contains(string(out), "stack overflow") {
			return "crash", "SIGSEGV"
		}
	}
	t.Fatalf("child %s %s %s %d: %v\n%s", op, where, shape, n, err, out)
	return "", ""
}

func requireStackChildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stack measurements use glibc's thread stack default, which ulimit -s sets on Linux")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	if os.Getenv(stackChildEnv) != "" {
		t.Skip("in a child")
	}
}

// worstShapes are the shapes with the most stack per unit of measure: the operator
// chains make two messages per counted token, the rest per level the most messages
// the measure allows.
var worstShapes = []string{"plus", "cast", "collate", "join", "union", "isnull", "subqueryboolsub",
	"subscriptbool", "fromfunc", "insertvalues", "parenchain10"}

// largestWithin returns the largest n with measure(shape(n)) ≤ limit, or, for the
// shapes whose measure does not grow with n (wide, not deep), flatSize.
func largestWithin(t *testing.T, s shape, limit int) int {
	t.Helper()
	lo, hi := 0, 1 // measure(lo) ≤ limit < measure(hi)
	for measureOf(t, s, hi) <= limit {
		if hi >= flatSize {
			return flatSize
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; measureOf(t, s, mid) <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

const flatSize = 1 << 12

func measureOf(t *testing.T, s shape, n int) int {
	t.Helper()
	text := s.gen(n)
	scan, err := pgquery.Scan(text)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := Measure(text, scan.Tokens, s.plpgsql, 1<<62)
	return m
}

// TestStackSafetyFactor checks the safety factor of 4 continuously: the deepest
// inputs the bounds admit, of the worst shapes, parse on the calling thread with a
// quarter of the 8 MiB stack the limits were chosen for.
func TestStackSafetyFactor(t *testing.T) {
	requireStackChildren(t)
	const quarter = 8 << 10 / 4 // KiB
	for _, name := range worstShapes {
		s := shapeNamed(name)
		n := largestWithin(t, s, OutputLimit)
		if got, msg := stackChild(t, quarter, "parse", "direct", name, n); got != "ok" {
			t.Errorf("%s at n=%d (measure ≤ %d): %s %s with %d KiB of stack", name, n, OutputLimit, got, msg, quarter)
		}
	}
	for _, name := range []string{"ifs", "loops", "blocks", "handlers", "casestmts"} {
		s := shapeNamed(name)
		n := largestWithin(t, s, BodyLimit)
		if got, msg := stackChild(t, quarter, "plpgsql", "direct", name, n); got != "ok" {
			t.Errorf("PL/pgSQL %s at n=%d: %s %s with %d KiB of stack", name, n, got, msg, quarter)
		}
	}
	// Deparse, at the deepest tree DeparseLimit admits.
	s := shapeNamed("plus")
	n := 0
	for n < 1<<20 {
		tree, err := pgquery.Parse(s.gen(n + 1))
		if err != nil || Depth(tree.ProtoReflect()) > DeparseLimit {
			break
		}
		n++
	}
	if got, msg := stackChild(t, quarter, "deparse", "direct", "plus", n); got != "ok" {
		t.Errorf("deparse at n=%d: %s %s", n, got, msg)
	}
}

// TestBigStack shows the big stack at work: a chain that overflows the thread's stack
// parses on it.
func TestBigStack(t *testing.T) {
	requireStackChildren(t)
	if runtime.GOOS != "linux" || !bigStackSupported {
		t.Skip("no big stack here")
	}
	const kib, n = 1 << 10, 4000 // 1 MiB overflows at about 3,000
	if got, _ := stackChild(t, kib, "parse", "direct", "plus", n); got != "crash" {
		t.Errorf("direct: %s, want a crash (has pg_query changed?)", got)
	}
	if got, msg := stackChild(t, kib, "parse", "big", "plus", n); got == "crash" {
		t.Errorf("big stack: %s %s", got, msg)
	}
}

// TestStackMeasure finds, for every shape, the smallest input that crashes pg_query
// or that it refuses, with the stack given in SQLFENCE_STACK_MEASURE (KiB), and
// prints the measure and tree depth there. It is how the limits were chosen:
//
//	SQLFENCE_STACK_MEASURE=8192 go test -run TestStackMeasure -v ./internal/pgtree
//
// SQLFENCE_STACK_OP (parse, deparse or plpgsql) and SQLFENCE_STACK_WHERE (direct or
// big) choose the call; SQLFENCE_STACK_SHAPES a comma-separated list of shapes.
func TestStackMeasure(t *testing.T) {
	kib, _ := strconv.Atoi(os.Getenv("SQLFENCE_STACK_MEASURE"))
	if kib == 0 {
		t.Skip("set SQLFENCE_STACK_MEASURE to a stack size in KiB")
	}
	requireStackChildren(t)
	op, where := cmpOr(os.Getenv("SQLFENCE_STACK_OP"), "parse"), cmpOr(os.Getenv("SQLFENCE_STACK_WHERE"), "direct")
	names := strings.Split(os.Getenv("SQLFENCE_STACK_SHAPES"), ",")
	if names[0] == "" {
		names = names[:0]
		for _, s := range shapes {
			if s.plpgsql == (op == "plpgsql") {
				names = append(names, s.name)
			}
		}
	}
	for _, name := range names {
		s := shapeNamed(name)
		// The smallest n at which the outcome is not "ok", by doubling then bisecting.
		lo, hi := 0, 1
		got, msg := stackChild(t, kib, op, where, name, hi)
		for got == "ok" && hi < 1<<19 {
			lo, hi = hi, hi*2
			got, msg = stackChild(t, kib, op, where, name, hi)
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if g, m := stackChild(t, kib, op, where, name, mid); g == "ok" {
				lo = mid
			} else {
				hi, got, msg = mid, g, m
			}
		}
		// Depth grows linearly with n in every shape: extrapolate from small n.
		d10, d20 := shapeDepth(t, s, 10), shapeDepth(t, s, 20)
		depth := d10 + (d20-d10)*(hi-10)/10
		stack := kib << 10
		if where == "big" {
			stack = bigStack
		}
		t.Logf("%-16s %s/%s %5d KiB: n=%-7d %-5s measure %7d, depth ~%7d (%d B/message) %.50s",
			name, op, where, kib, hi, got, measureOf(t, s, hi), depth, stack/max(depth, 1), msg)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// shapeDepth is the depth of shape(n)'s tree: protobuf messages, or for PL/pgSQL the
// nesting of the JSON pg_query dumps.
func shapeDepth(t *testing.T, s shape, n int) int {
	t.Helper()
	if s.plpgsql {
		out, err := pgquery.ParsePlPgSqlToJSON(plpgsqlFunction(s.gen(n)))
		if err != nil {
			t.Fatalf("%s(%d): %v", s.name, n, err)
		}
		return jsonDepth(out)
	}
	tree, err := pgquery.Parse(s.gen(n))
	if err != nil {
		t.Fatalf("%s(%d): %v", s.name, n, err)
	}
	return Depth(tree.ProtoReflect())
}

// jsonDepth is the nesting of objects and arrays in JSON text.
func jsonDepth(s string) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range s {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString:
			inString = c != '"'
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			deepest = max(deepest, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return deepest
}
