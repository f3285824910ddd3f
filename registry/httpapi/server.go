package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/fencegate/fencegate/grant"
	"github.com/fencegate/fencegate/registry"
	"github.com/fencegate/fencegate/wire"
)

// CallTimeoutMsDefault bounds one API call's registry work (store round
// trips and compare-and-swap retries), 10s, on top of an acquire's own
// wait. A call past it answers TIMEOUT (504); an acquire retried with the
// same request ID then finds out what happened.
const CallTimeoutMsDefault = 10_000

// ReadyTimeoutMs bounds the store read behind /readyz, 2s.
const ReadyTimeoutMs = 2000

// Config wires a Server.
type Config struct {
	// Registry serves the calls. Required.
	Registry *registry.Registry
	// Store answers /readyz (a linearizable read of the settings). Optional:
	// without it /readyz answers like /healthz.
	Store registry.Store
	// Auth yields the caller's identity. Required: no identity, no service.
	Auth Authenticator
	// Admins may call /v1/admin/.... Optional, defaults to nobody.
	Admins Admins
	// Authorizer says which identity may do which verb to which resource
	// (a *PolicyFile, a *Policy, or AllowAll for no restriction), asked
	// on every call that names a resource, admin calls aside: they are
	// the admin role's, registry-wide. Required: whether every
	// authenticated identity may lock every resource is a decision, never
	// a default.
	Authorizer Authorizer
	// Metrics are counted and served at /metrics. Optional, defaults to a
	// new NewMetrics().
	Metrics *Metrics
	// CallTimeoutMs bounds one call; see CallTimeoutMsDefault (the default
	// when 0).
	CallTimeoutMs uint64
	// Logger receives the audit records of admin calls and, with
	// RequestLog, one line per call. Optional, defaults to slog.Default().
	Logger *slog.Logger
	// RequestLog logs every /v1 call at INFO: method, path, identity,
	// resource, outcome, latency_ms, fence (when granted), trace_id.
	// Optional, defaults to off.
	RequestLog bool
	// TracerProvider makes a server span per call, continuing the caller's
	// W3C trace context. Optional, defaults to otel's global provider (a
	// no-op unless the program installs one).
	TracerProvider trace.TracerProvider
	// TrustBundle publishes the signed trust bundle at TrustBundlePath.
	// Optional: without it the path answers 404.
	TrustBundle BundlePublisher
	// Seen is told the resource named by every successful /v1 call (the
	// dashboard's list of resources, dashboard). Optional; it
	// must not block.
	Seen func(resource string)
}

// Server is the HTTP API. It holds no state of its own.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	tracer  trace.Tracer
	ops     map[string]batchOp // what POST /v1/batch carries
	workers *batchWorkers      // run a batch's operations
}

// NewServer checks cfg and builds the routes.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Registry == nil || cfg.Auth == nil || cfg.Authorizer == nil {
		return nil, errors.New("httpapi: server needs a registry, an authenticator and an authorizer (AllowAll to let every identity lock every resource)")
	}
	if err := ValidateAdmins(cfg.Admins); err != nil {
		return nil, err
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.CallTimeoutMs == 0 {
		cfg.CallTimeoutMs = CallTimeoutMsDefault
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), tracer: cfg.TracerProvider.Tracer(TracerName)}
	s.routes()
	s.ops, s.workers = s.batchOps(), newBatchWorkers()
	return s, nil
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.cfg.Metrics }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Route is one method and path pattern the server answers (a path may
// hold a {wildcard}). api/openapi.yaml describes exactly these; a test
// holds the two together.
type Route struct {
	Method, Path string
}

// route is a Route with its handler.
type route struct {
	Route
	h http.Handler
}

// table is every route the server serves: the /v1 calls, then the
// endpoints that need no identity. routes registers exactly these.
func (s *Server) table() []route {
	var out []route
	for _, e := range s.endpoints() {
		out = append(out, route{Route{e.method, e.path}, s.wrap(e)})
	}
	health := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, wire.Health{Status: "ok"}) })
	for _, r := range []route{
		{Route{http.MethodGet, "/healthz"}, health},
		{Route{http.MethodGet, "/readyz"}, http.HandlerFunc(s.ready)},
		{Route{http.MethodGet, TrustBundlePath}, http.HandlerFunc(s.trustBundle)},
		{Route{http.MethodGet, "/metrics"}, s.cfg.Metrics.Handler()},
	} {
		out = append(out, route{r.Route, onlyGet(r.h)})
	}
	return out
}

// Routes lists what the server serves, in a fixed order, with paths in
// OpenAPI's form (a rest-of-path wildcard {name...} shows as {name}).
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.table() {
		out = append(out, Route{r.Method, strings.ReplaceAll(r.Path, "...}", "}")})
	}
	return out
}

func (s *Server) routes() {
	for _, r := range s.table() {
		s.mux.Handle(r.Path, r.h)
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, wire.ErrorBody{Code: wire.CodeNotFound, Message: "httpapi: no endpoint " + r.URL.Path})
	})
}

// onlyGet answers GET and HEAD (a GET without its body) with h, anything
// else with 405 as the /v1 calls do.
func onlyGet(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, fmt.Errorf("%w: %s wants GET", errMethod, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ready answers 200 only when the store answers a linearizable read.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeoutMs*time.Millisecond)
		defer cancel()
		if _, err := s.cfg.Store.Read(ctx, "", nil); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, wire.Health{Status: "store: " + err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok"})
}

// endpoint is one /v1 call.
type endpoint struct {
	path   string // mux pattern, without method
	method string
	admin  bool
	// action names an admin call in its audit line (raise-floor, ...).
	action string
	// mutates: a successful call changes the registry and is audited;
	// a refused admin call is audited whether or not it would have.
	mutates bool
	// audited: audited as an admin call is, though not only admins may
	// make it (a break, which the resource policy may allow).
	audited bool
	// manyResources: the body names no one resource (a batch, whose
	// operations note their own), so it is not searched for one.
	manyResources bool
	// bodyBytesMax bounds the body; 0 means RequestBytesMax.
	bodyBytesMax int
	// call does the work for an authenticated caller; body is at most
	// bodyBytesMax bytes (empty for GET).
	call func(ctx context.Context, caller string, r *http.Request, body []byte) (any, error)
	// count, when set, records the outcome code ("" for ok) in a metric.
	count func(code string)
}

// wrap runs the checks every call shares, in order: method, identity
// (401 before anything else is read), media type (415, before the body is
// read), admin (403), body size, then call; and records the call: its
// metrics, span, request line and, for an admin call, its audit line.
func (s *Server) wrap(e endpoint) http.Handler {
	st := newSpanStart(e)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, span := s.startSpan(r, st)
		rec := &callRecord{}
		code := s.serve(w, r.WithContext(withRecord(ctx, rec)), e)
		s.observe(ctx, r, e, rec, code, time.Since(start), span)
		s.cfg.Metrics.call(e.path, code)
		if e.admin || e.audited {
			s.auditCall(ctx, e, rec, code)
		}
		if s.cfg.Seen != nil && code == "" {
			for _, res := range rec.seen() {
				s.cfg.Seen(res)
			}
		}
		if e.count != nil && code != wire.CodeMethodNotAllowed && code != wire.CodeUnauthenticated && code != wire.CodeForbidden {
			e.count(code)
		}
	})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, e endpoint) string {
	if r.Method != e.method {
		w.Header().Set("Allow", e.method)
		return writeError(w, fmt.Errorf("%w: %s wants %s", errMethod, r.URL.Path, e.method))
	}
	caller, err := s.cfg.Auth.Authenticate(r)
	if err != nil {
		return writeError(w, err)
	}
	noteCaller(r.Context(), caller)
	if err := CheckJSONContentType(r); err != nil {
		return writeError(w, err)
	}
	if e.admin && !s.cfg.Admins.Has(caller) {
		return writeError(w, fmt.Errorf("%w: %s is not an admin identity", errForbidden, caller))
	}
	body, err := readBody(r, cmp.Or(e.bodyBytesMax, RequestBytesMax))
	if err != nil {
		return writeError(w, err)
	}
	ctx := withIdentity(r.Context(), caller)
	resp, err := e.call(ctx, caller, r, body)
	if !e.manyResources {
		noteBody(ctx, body) // after the call: one that decoded its body noted its resource already
	}
	if err != nil {
		return writeError(w, err)
	}
	writeJSON(w, http.StatusOK, resp)
	return ""
}

// authorize asks the Authorizer whether caller may do verb to resource,
// a valid resource name (else INVALID, before the policy is asked), and
// records a refusal in the audit log.
func (s *Server) authorize(ctx context.Context, path, caller string, verb Verb, resource string) error {
	if err := grant.ValidateResource(resource); err != nil {
		return fmt.Errorf("%w: resource %q: %v", wire.ErrInvalid, resource, err)
	}
	if name, _, slot := wire.SlotOf(resource); slot {
		// A semaphore's slot is reached with its semaphore's rights: a
		// policy names the semaphore, never its slots.
		resource = name
	}
	err := s.cfg.Authorizer.Authorize(caller, verb, resource)
	if fe := (*ForbiddenError)(nil); errors.As(err, &fe) {
		AuditRefusal(ctx, s.cfg.Logger, fe, path, "api")
	}
	return err
}

// callContext bounds one call's registry work, plus extraMs for a wait.
func (s *Server) callContext(ctx context.Context, extraMs uint64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, time.Duration(s.cfg.CallTimeoutMs+extraMs)*time.Millisecond)
}
