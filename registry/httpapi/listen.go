package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Server timeouts, in milliseconds.
const (
	// ReadHeaderTimeoutMs bounds reading a request's headers, 10s: a slow
	// client cannot hold a connection open by trickling them.
	ReadHeaderTimeoutMs = 10_000
	// ReadTimeoutMs bounds reading a whole request, 30s (bodies are at
	// most RequestBytesMax).
	ReadTimeoutMs = 30_000
	// IdleTimeoutMs closes idle keep-alive connections after 2 min.
	IdleTimeoutMs = 120_000
	// ShutdownGraceMs is how long in-flight calls get to finish once
	// shutdown starts, 5s; then waiting acquires are cancelled (their
	// tickets withdrawn) and connections closed. A client whose call was cut
	// retries with the same request ID and learns what happened.
	ShutdownGraceMs = 5000
)

// Serve serves h on ln (with TLS when tlsCfg is not nil) until ctx ends,
// then shuts down gracefully within ShutdownGraceMs. A long acquire wait is
// bounded by the registry and CallTimeoutMs, so there is no write timeout
// that could cut an answer the registry already committed to.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, tlsCfg *tls.Config) error {
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeoutMs * time.Millisecond,
		ReadTimeout:       ReadTimeoutMs * time.Millisecond,
		IdleTimeout:       IdleTimeoutMs * time.Millisecond,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("httpapi: serve: %w", err)
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.Background(), ShutdownGraceMs*time.Millisecond)
	defer cancel()
	err := srv.Shutdown(grace)
	if errors.Is(err, context.DeadlineExceeded) {
		cancelBase() // waits end, tickets are withdrawn
		err = srv.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("httpapi: shutdown: %w", err)
	}
	return nil
}
