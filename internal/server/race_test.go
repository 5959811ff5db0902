//go:build race

package server_test

// raceEnabled: the race detector changes what memory a goroutine costs, so
// byte budgets are not checked under it (goroutine counts still are).
const raceEnabled = true
