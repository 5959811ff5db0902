module github.com/fenceview/fenceview

go 1.26.8

require github.com/mattn/go-sqlite3 v1.14.53

require github.com/gorilla/websocket v1.5.3

require github.com/lib/pq v1.12.3
