module github.com/fenceview/fenceview

go 1.26.8
