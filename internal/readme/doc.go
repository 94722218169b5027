// Package readme holds the tests that keep README.md and the guides under docs/
// true: their Go snippets type-check against the packages they use, their files and
// sample outputs are the ones in the repository (which other tests produce by
// running the programs), their policies parse, and their links reach a file and a
// heading that exist.
package readme
