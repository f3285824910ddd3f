// This file measures what etcd itself charges, to explain the registry's
// floor: the CPU a put costs inside transactions of 1, 32 and 100 puts,
// and the latency of a one-put transaction as its value grows (the WAL
// fsync grows with the bytes). Timings are reported, never asserted.
//
//	go test ./registry/etcdstore -run '^$' -bench Etcd -benchtime 200x
package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

func putOp(key string, value []byte) *pb.RequestOp {
	return &pb.RequestOp{Request: &pb.RequestOp_RequestPut{RequestPut: &pb.PutRequest{Key: []byte(key), Value: value}}}
}

// BenchmarkEtcdPutsPerTxn: one op is one transaction of n 500-byte puts,
// sent one after another; cpu-us/put is the process's CPU per put.
func BenchmarkEtcdPutsPerTxn(b *testing.B) {
	s := New(benchEtcd(b), fmt.Sprintf("/bench-puts-%d/", prefixSeq.Add(1)))
	value := []byte(strings.Repeat("x", 500))
	for _, n := range []int{1, 32, 100} {
		b.Run(fmt.Sprint("puts-", n), func(b *testing.B) {
			ops := make([]*pb.RequestOp, n)
			for j := range ops {
				ops[j] = putOp(fmt.Sprint(s.prefix, "k", j), value)
			}
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := s.txn(context.Background(), &pb.TxnRequest{Success: ops}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N*n), "cpu-us/put")
		})
	}
}

// BenchmarkEtcdTxnBytes: median latency of a one-put transaction by value
// size, the sizes alternating so all see the same disk.
func BenchmarkEtcdTxnBytes(b *testing.B) {
	s := New(benchEtcd(b), fmt.Sprintf("/bench-bytes-%d/", prefixSeq.Add(1)))
	sizes := []int{16, 1024, 2048, 4096}
	lat := make([][]float64, len(sizes))
	for b.Loop() {
		for i, n := range sizes {
			op := putOp(s.prefix+"v", []byte(strings.Repeat("x", n)))
			t0 := time.Now()
			if _, err := s.txn(context.Background(), &pb.TxnRequest{Success: []*pb.RequestOp{op}}); err != nil {
				b.Fatal(err)
			}
			lat[i] = append(lat[i], float64(time.Since(t0).Microseconds()))
		}
	}
	for i, n := range sizes {
		b.ReportMetric(median(lat[i]), fmt.Sprintf("us-at-%dB", n))
	}
}
