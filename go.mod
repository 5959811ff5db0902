module github.com/fenceview/fenceview

go 1.26.8

require github.com/mattn/go-sqlite3 v1.14.53 // indirect
