// Package depcheck pins the modules the registry, gate and simulator build
// on while those packages are written in parallel, so go.mod and go.sum do
// not churn under concurrent work. Delete it once real packages import all
// of them.
package depcheck

import (
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/client/v3/concurrency"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "modernc.org/sqlite"
	_ "pgregory.net/rapid"
)
