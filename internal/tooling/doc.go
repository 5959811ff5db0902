// Package tooling has no code of its own: its tests hold the repository's
// tooling to the tree, so none of it can drift. Every fuzz target is named
// in .ci/fuzz-targets, which both .ci/run and `task fuzz` read; every
// Taskfile command is well-formed bash naming paths that exist; `task
// generate` runs every generator in the tree; the README's layout table
// lists every package; CONTRIBUTING.md names every test that -short
// skips; and every Markdown table renders as one table (read by goldmark,
// a GitHub-flavoured Markdown parser, rather than guessed line by line).
package tooling
