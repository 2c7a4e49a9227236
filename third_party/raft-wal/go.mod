module github.com/hashicorp/raft-wal

go 1.18

require (
	github.com/HdrHistogram/hdrhistogram-go v1.1.0
	github.com/armon/go-metrics v0.4.1
	github.com/benbjohnson/immutable v0.4.0
	github.com/benmathews/bench v0.0.0-20210120214102-f7c75b9ef6e7
	github.com/benmathews/hdrhistogram-writer v0.0.0-20210120211942-3cb1c7c33f95
	github.com/coreos/etcd v3.3.27+incompatible
	github.com/google/gofuzz v1.2.0
	github.com/hashicorp/go-hclog v0.14.1
	github.com/hashicorp/raft v1.4.0
	github.com/hashicorp/raft-boltdb v0.0.0-20220329195025-15018e9b97e0
	github.com/hashicorp/raft-boltdb/v2 v2.2.2
	github.com/segmentio/fasthash v1.0.3
	github.com/stretchr/testify v1.8.2
	go.etcd.io/bbolt v1.3.6
)

require (
	github.com/boltdb/bolt v1.3.1 // indirect
	github.com/coreos/go-systemd v0.0.0-20191104093116-d3cd4ed1dbcf // indirect
	github.com/coreos/pkg v0.0.0-20220810130054-c7d1c02cb6cf // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/fatih/color v1.9.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.0 // indirect
	github.com/hashicorp/go-msgpack v1.1.5 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/mattn/go-colorable v0.1.6 // indirect
	github.com/mattn/go-isatty v0.0.12 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/exp v0.0.0-20220827204233-334a2380cb91 // indirect
	golang.org/x/sys v0.0.0-20220728004956-3c1f35247d10 // indirect
	golang.org/x/time v0.1.0 // indirect
	gonum.org/v1/gonum v0.12.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
