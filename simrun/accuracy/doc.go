// Package accuracy measures the diagnosis against ground truth and writes
// what it finds: random simulator scenarios (through simrun) against the
// simulator's own account of where each request's time went, the built-in
// scenarios against the verdict each is built for, windows recorded from an
// independent simulator, and real cases pasted in public threads
// (diagnosis/testdata). It generates docs/accuracy.md and
// docs/scenarios.md; its tests fail when they are stale.
package accuracy

//go:generate go run ./gen -scenarios ../../docs/scenarios.md -accuracy ../../docs/accuracy.md
