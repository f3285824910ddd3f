// This file proves that serve takes every --etcd-quota-bytes in its range
// (drawn over all of it) and refuses, before it opens anything, a quota
// outside it, naming the range, or one given with --zookeeper.
package main

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestEtcdQuotaFlagOverItsRange(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		q := rapid.OneOf(rapid.Just(int64(0)), rapid.Just(int64(etcdQuotaBytesMin)), rapid.Just(int64(etcdQuotaBytesMax)),
			rapid.Int64Range(etcdQuotaBytesMin, etcdQuotaBytesMax)).Draw(rt, "quota")
		s := storeOptions{formName: "compact", etcdQuotaBytes: q}
		if err := s.check(); err != nil {
			rt.Fatalf("--etcd-quota-bytes %d: %v", q, err)
		}
	})
	for _, q := range []int64{-1, 1, etcdQuotaBytesMin - 1, etcdQuotaBytesMax + 1} {
		s := storeOptions{formName: "compact", etcdQuotaBytes: q}
		if err := s.check(); err == nil || !strings.Contains(err.Error(), "want 16777216 (16 MiB) to 8589934592 (8 GiB)") {
			t.Errorf("--etcd-quota-bytes %d: %v, want a refusal naming the range", q, err)
		}
	}
	s := storeOptions{formName: "compact", etcdQuotaBytes: etcdQuotaBytesMin}
	s.zk.servers = []string{"127.0.0.1:2181"}
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "ZooKeeper's limits are its own") {
		t.Errorf("--etcd-quota-bytes with --zookeeper: %v, want a refusal", err)
	}
}
