package resledger

import (
	"context"
	"errors"

	"github.com/fencegate/fencegate/demo/ledger"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/report"
	"github.com/fencegate/fencegate/gate/report/objreport"
	"github.com/fencegate/fencegate/gate/report/redisreport"
	"github.com/fencegate/fencegate/gate/report/storereport"
)

// reportSource is the bounded report source of store's gate and its
// decision counters: redisreport on Redis, objreport on an object store.
func reportSource(store Store) (*storereport.Source, *gate.Counters, error) {
	switch s := store.(type) {
	case *RedisStore:
		if s.Gate != nil {
			return redisreport.New(s.Gate), s.Gate.Counters(), nil
		}
	case *S3Store:
		if s.Gate != nil {
			return objreport.New(s.Gate, nil), s.Gate.Counters(), nil
		}
	}
	return nil, nil, errors.New("resledger: a lease-only ledger has no gate to report")
}

// Reporter returns the reporter of store's gate to the registry o names,
// as demo/ledger's: its resources, last decisions and open UNKNOWN
// operations, and, with o.Identity, the resumes an admin confirms on the
// dashboard, verified with pol's trust bundle. Run it with Run. o.Read is
// not used: the store is read through its gate's bounded listings.
func (s *Server) Reporter(o ledger.ReportOptions, store Store, pol gate.Policy) (*report.Reporter, error) {
	src, counters, err := reportSource(store)
	if err != nil {
		return nil, err
	}
	service := "ledger on " + map[bool]string{true: "Redis", false: "S3"}[isRedis(store)]
	cfg := report.Config{URL: o.URL, Token: o.Token, Service: service, Source: src, Log: s.log, Unknown: s.unknown,
		Counters: counters, IntervalMs: o.IntervalMs, Logger: o.Logger}
	if o.Identity != "" {
		cfg.Commands = &report.CommandConfig{Identity: o.Identity, Verifier: pol.Verifier, Resumer: src}
	}
	return report.New(cfg)
}

func isRedis(store Store) bool { _, ok := store.(*RedisStore); return ok }

// startReporter runs the reporter of o until ctx ends.
func (s *Server) startReporter(ctx context.Context, o ledger.ReportOptions, store Store, pol gate.Policy) error {
	r, err := s.Reporter(o, store, pol)
	if err != nil {
		return err
	}
	go r.Run(ctx)
	return nil
}
