module github.com/fenceview/fenceview

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/gorilla/websocket v1.5.3
	github.com/lib/pq v1.12.3
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/tetratelabs/wazero v1.12.0
)

require golang.org/x/sys v0.44.0 // indirect
