package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/fencegate/fencegate/registry/httpapi"
)

// CookieName holds a browser's session ID after /ui/login: a random
// value that names a session kept by this serve process, never the
// bearer token the browser logged in with.
const CookieName = "fencegate_ui"

// CookieMaxAgeS is the login cookie's lifetime, SessionTTLMs in seconds:
// the browser forgets the ID when serve would refuse it anyway.
const CookieMaxAgeS = SessionTTLMs / 1000

// FormBytesMax bounds a form post, 8 KiB.
const FormBytesMax = 8 << 10

// contentSecurityPolicy allows only the page's own assets: no inline
// script, no other origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secured sets the headers every page carries and refuses a cross-origin
// POST before anything else reads it (a client certificate travels with
// any request the browser makes, so the cookie's SameSite is not enough).
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin") // not no-referrer: that makes a browser send "Origin: null" with our own forms
		h.Set("X-Frame-Options", "DENY")
		if !strings.HasPrefix(r.URL.Path, PathPrefix+"assets/") {
			h.Set("Cache-Control", "no-store")
		}
		if r.Method == http.MethodPost && !sameOrigin(r) {
			http.Error(w, "dashboard: cross-origin form refused", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, FormBytesMax)
		next.ServeHTTP(w, r)
	})
}

// sameOrigin accepts a POST whose Origin (or, without one, Referer) names
// this host; a request with neither is not a browser's cross-site form.
func sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return true
	}
	u, err := url.Parse(src)
	return err == nil && u.Host == r.Host
}

type viewerKey struct{}

// viewer is who is looking, and whether they may act.
type viewer struct {
	ID    string
	Admin bool
}

func viewerFrom(ctx context.Context) viewer {
	v, _ := ctx.Value(viewerKey{}).(viewer)
	return v
}

// identify authenticates r as the API does; a browser without a client
// certificate or an Authorization header is tried with its session
// cookie, which names the identity that logged in (the role is checked
// again on every request, by the caller).
func (d *Dashboard) identify(r *http.Request) (string, error) {
	id, err := d.cfg.Auth.Authenticate(r)
	if !errors.Is(err, httpapi.ErrNoCredentials) {
		return id, err
	}
	c, cerr := r.Cookie(CookieName)
	if cerr != nil || c.Value == "" {
		return "", err
	}
	return d.sessions.identity(c.Value, d.cfg.Clock.Now())
}

// withToken authenticates r as if it carried token as its bearer token.
func (d *Dashboard) withToken(r *http.Request, token string) (string, error) {
	r2 := r.Clone(r.Context())
	r2.Header.Set("Authorization", "Bearer "+token)
	return d.cfg.Auth.Authenticate(r2)
}

// viewing lets admins and viewers through; anyone else gets the login
// page (no identity) or a refusal naming their identity.
func (d *Dashboard) viewing(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := d.identify(r)
		if err != nil {
			d.render(w, http.StatusUnauthorized, "login.html", loginData{Error: loginError(err)})
			return
		}
		if !d.isViewer(id) {
			d.fail(w, r, http.StatusForbidden, id+" is neither an admin nor a viewer of this dashboard (serve --admin, --viewer)")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, viewer{ID: id, Admin: d.isAdmin(id)})))
	}
}

func loginError(err error) string {
	if errors.Is(err, httpapi.ErrNoCredentials) {
		return ""
	}
	return err.Error()
}

type loginData struct{ Error string }

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, http.StatusOK, "login.html", loginData{})
}

// login checks the token and, if it names an admin or a viewer, starts
// a session for that identity and gives the browser its ID in an
// HttpOnly, SameSite=Strict cookie scoped to the page. The token is used
// for this one request and kept nowhere.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	id, err := d.withToken(r, token)
	if err == nil && !d.isViewer(id) {
		err = errors.New(id + " is neither an admin nor a viewer of this dashboard")
	}
	if err != nil || token == "" {
		msg := "give a bearer token"
		if err != nil {
			msg = err.Error()
		}
		d.render(w, http.StatusUnauthorized, "login.html", loginData{Error: msg})
		return
	}
	sid, err := d.sessions.create(id, d.cfg.Clock.Now())
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: sid, Path: PathPrefix, MaxAge: CookieMaxAgeS,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, PathPrefix, http.StatusSeeOther)
}

// logout ends the browser's session at serve, so its ID is refused from
// now on whoever holds a copy, and clears the cookie.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		d.sessions.end(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: PathPrefix, MaxAge: -1,
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, PathPrefix+"login", http.StatusSeeOther)
}

type failData struct {
	Status  int
	Message string
}

// fail renders an error page.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, status, "fail.html", failData{Status: status, Message: msg})
}
