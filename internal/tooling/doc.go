// Package tooling has no code of its own: its tests hold the repository's
// tooling to the tree, so none of it can drift. Every fuzz target is named
// in .ci/fuzz-targets, which both .ci/run and `task fuzz` read; every
// Taskfile command is well-formed bash naming paths that exist; `task
// generate` runs every generator in the tree; the README's layout table
// lists every package; and CONTRIBUTING.md names every test that -short
// skips.
package tooling
