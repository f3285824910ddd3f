package main

import (
	"context"
	"net/http"
	"time"

	"github.com/fencegate/fencegate/client/httpclient"
	"github.com/fencegate/fencegate/internal/telemetry"
	"github.com/spf13/pflag"
)

// callTimeoutDefault bounds one operator command's calls, 10s: long
// enough for a registry behind a load balancer, short enough that a dead
// one is reported rather than waited on.
const callTimeoutDefault = 10 * time.Second

// endpointFlags are how a client command reaches an HTTP service (the
// registry, or a gate's admin endpoint): its URL, TLS files and the
// bearer token, each also settable through FENCEGATE_*.
type endpointFlags struct {
	name                   string // "registry" or "gate": the flags' names
	url, cacert, cert, key string
	token                  *string // shared by every endpoint of a command
}

// add registers --NAME, --NAME-cacert, --NAME-cert, --NAME-key.
func (e *endpointFlags) add(fs *pflag.FlagSet, def, what string) {
	fs.StringVar(&e.url, e.name, def, what)
	fs.StringVar(&e.cacert, e.name+"-cacert", "", "CA bundle (PEM) verifying the "+e.name+"'s certificate (default: system roots)")
	fs.StringVar(&e.cert, e.name+"-cert", "", "client certificate (PEM) for mTLS to the "+e.name+", with --"+e.name+"-key")
	fs.StringVar(&e.key, e.name+"-key", "", "client private key (PEM)")
	bindEnv(fs, e.name, e.name+"-cacert", e.name+"-cert", e.name+"-key")
}

// tokenFlag registers --token, shared by a command's endpoints, and
// points each endpoint at it.
func tokenFlag(fs *pflag.FlagSet, eps ...*endpointFlags) {
	tok := new(string)
	fs.StringVar(tok, "token", "", "bearer token of your identity (prefer FENCEGATE_TOKEN: a flag shows in ps)")
	bindEnv(fs, "token")
	for _, e := range eps {
		e.token = tok
	}
}

// bearer returns the token, or "" for none (mTLS).
func (e *endpointFlags) bearer() string {
	if e.token == nil {
		return ""
	}
	return *e.token
}

// httpClient builds the HTTP client of the endpoint's TLS flags.
func (e *endpointFlags) httpClient() (*http.Client, error) {
	if (e.cert == "") != (e.key == "") {
		return nil, usagef("--%s-cert and --%s-key go together", e.name, e.name)
	}
	return httpclient.ClientTLSFiles{CAFile: e.cacert, CertFile: e.cert, KeyFile: e.key}.HTTPClient()
}

// registryClient is the typed registry client of the flags.
func (e *endpointFlags) registryClient(opts ...httpclient.ClientOption) (*httpclient.Client, error) {
	if e.url == "" {
		return nil, usagef("--%s is required: the registry's URL, e.g. https://registry:7420 (or FENCEGATE_REGISTRY)", e.name)
	}
	hc, err := e.httpClient()
	if err != nil {
		return nil, err
	}
	tok := e.bearer()
	all := []httpclient.ClientOption{httpclient.WithHTTPClient(hc), httpclient.WithHeaders(telemetry.InjectHeaders)}
	if tok != "" {
		all = append(all, httpclient.WithBearerToken(tok))
	}
	c, err := httpclient.NewClient(e.url, append(all, opts...)...)
	if err != nil {
		return nil, usagef("--%s: %v", e.name, err)
	}
	return c, nil
}

// callContext bounds one command's calls.
func callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, callTimeoutDefault)
}
