package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/fencegate/fencegate/clock"
	"github.com/fencegate/fencegate/gate"
	"github.com/fencegate/fencegate/gate/gatemetrics"
)

// Source reads the gate's resources for a report. It runs on the
// reporter's goroutine, never inside a write.
type Source interface {
	// Resources returns views of at most limit resources, paused ones
	// first, then those named in recent (in that order), then others;
	// and how many resources the gate knows in all.
	Resources(ctx context.Context, recent []string, limit int) ([]ResourceView, int, error)
}

// CoverageSource is a Source that also reads the gate's coverage counts
// (a SQL gate's protected tables): the Reporter adds them to each report.
type CoverageSource interface {
	Source
	// Coverage reads the gate's coverage (gate.Coverage).
	Coverage(ctx context.Context) (gate.Coverage, error)
}

// Config wires a Reporter.
type Config struct {
	// URL is the registry's base URL (https://registry:7420). Required.
	URL string
	// Token is the gate's bearer token at the registry. Optional: with a
	// client certificate in HTTPClient instead.
	Token string
	// HTTPClient sends the reports. Optional, defaults to a client with a
	// ReportTimeoutMs timeout.
	HTTPClient *http.Client
	// Service is the label the dashboard shows beside the gate's identity.
	// Optional, at most TextBytesMax bytes.
	Service string
	// Source reads the gate's state. Required.
	Source Source
	// Log, Unknown and Counters add the last decisions, the open UNKNOWN
	// operations and the decision counts. Each is optional.
	Log      *Log
	Unknown  *gatemetrics.UnknownTracker
	Counters *gate.Counters
	// Commands lets the registry's dashboard resume this gate's resources.
	// Optional: without it every command is answered ResultDisabled.
	Commands *CommandConfig
	// IntervalMs is the time between reports. Optional, defaults to
	// IntervalMsDefault; raised to IntervalMsMin.
	IntervalMs uint64
	// Clock stamps reports and judges command expiry. Optional, defaults
	// to the system clock.
	Clock clock.Clock
	// Logger receives failed reports (WARN) and applied commands (INFO,
	// audit=true). Optional, defaults to slog.Default().
	Logger *slog.Logger
}

// ReportTimeoutMs bounds one report's round trip, 5 s.
const ReportTimeoutMs = 5000

// Reporter pushes a gate's reports; see the package doc. Run it on its
// own goroutine.
type Reporter struct {
	cfg  Config
	base *url.URL
	// startedMs is the gate clock at New: commands issued before it are
	// refused (see admit).
	startedMs int64

	mu       sync.Mutex
	pending  []Result          // results not yet delivered
	seen     map[string]Result // command ID → final result
	seenFIFO []string
	lastErr  error
}

// New checks cfg and returns a Reporter.
func New(cfg Config) (*Reporter, error) {
	if cfg.URL == "" || cfg.Source == nil {
		return nil, errors.New("report: Config.URL and Config.Source are required")
	}
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("report: URL %q: want http(s)://host:port", cfg.URL)
	}
	if cfg.Commands != nil {
		if err := cfg.Commands.check(); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: ReportTimeoutMs * time.Millisecond}
	}
	cfg.IntervalMs = clampInterval(cfg.IntervalMs)
	if cfg.Clock == nil {
		cfg.Clock = clock.System{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reporter{cfg: cfg, base: base.JoinPath(ReportPath), startedMs: cfg.Clock.Now().UnixMilli(), seen: map[string]Result{}}, nil
}

func clampInterval(ms uint64) uint64 {
	switch {
	case ms == 0:
		return IntervalMsDefault
	case ms < IntervalMsMin:
		return IntervalMsMin
	case ms > 60_000:
		return 60_000
	}
	return ms
}

// Run reports until ctx ends, which is its only way to return. A failed
// report is logged and retried at the next interval; the write path never
// waits for it.
func (r *Reporter) Run(ctx context.Context) error {
	for {
		wait := time.Duration(r.cfg.IntervalMs) * time.Millisecond
		if err := r.Once(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "gate report failed", slog.String("registry", r.cfg.URL), slog.String("error", err.Error()))
		}
		if r.hasPending() {
			wait = IntervalMsMin * time.Millisecond // send command results soon
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-r.cfg.Clock.After(wait):
		}
	}
}

// Once sends one report and applies the commands of its answer; their
// results go with the next report.
func (r *Reporter) Once(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReportTimeoutMs*time.Millisecond)
	defer cancel()
	rep, sent, err := r.build(ctx)
	if err == nil {
		var ans *Answer
		if ans, err = r.post(ctx, rep); err == nil {
			r.delivered(sent)
			if ans.IntervalMs != 0 {
				r.cfg.IntervalMs = clampInterval(ans.IntervalMs)
			}
			r.applyAll(ctx, ans.Commands)
		}
	}
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
	return err
}

// LastError is the outcome of the last report (nil: it was delivered).
func (r *Reporter) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func (r *Reporter) hasPending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending) > 0
}

// delivered drops the first n pending results: the registry has them.
func (r *Reporter) delivered(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = r.pending[min(n, len(r.pending)):]
}

// result queues res for the next report; a final one is remembered, so a
// redelivered command gets the same answer and is not applied twice.
func (r *Reporter) result(res Result, final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, res)
	if len(r.pending) > 4*ResultsPerReportMax {
		r.pending = r.pending[len(r.pending)-4*ResultsPerReportMax:]
	}
	if final && res.ID != "" {
		if _, ok := r.seen[res.ID]; !ok {
			r.seenFIFO = append(r.seenFIFO, res.ID)
		}
		r.seen[res.ID] = res
		for len(r.seenFIFO) > SeenCommandsMax {
			delete(r.seen, r.seenFIFO[0])
			r.seenFIFO = r.seenFIFO[1:]
		}
	}
}

// SeenCommandsMax is how many applied command IDs a Reporter remembers,
// 256 (commands expire after CommandTTLMs anyway).
const SeenCommandsMax = 256
