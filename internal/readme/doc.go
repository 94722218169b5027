// Package readme holds the test that keeps README.md true: its Go snippets
// type-check against the packages they use, and its files and sample outputs are
// the ones in the repository (which other tests produce by running the programs).
package readme
