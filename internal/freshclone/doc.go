// Package freshclone holds the tests that do what a newcomer does with a
// fresh clone and the README alone: run its commands as written, and
// compile every Go snippet of README.md and docs/.
package freshclone
