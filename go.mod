module github.com/fifoq/fifoq

go 1.26.8
