package main

// writer is what a peer's load client writes with: its holder id, and data
// new on every fenced write (value+n, value distinct per client), so no
// database can skip a write as unchanged (SQLite skips, and does not
// sync, a row updated to identical content).
type writer struct {
	holder string
	value  int64
	n      int64
}

func newWriter(id int, holder string) writer { return writer{holder: holder, value: int64(id) << 40} }

// next is the data of the next fenced write.
func (w *writer) next() int64 {
	w.n++
	return w.value + w.n
}
