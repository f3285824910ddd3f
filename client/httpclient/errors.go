package httpclient

import "strings"

// layered is this package's error around another: it reads "httpclient: "
// + words + err's message without err's own "httpclient: " (a chain says
// each layer once: "httpclient: UNAUTHENTICATED (401 Unauthorized): …",
// not "httpclient: client: refused: httpclient: Unauthorized: …"), and
// unwraps to class, when set, and err.
type layered struct {
	class error // a sentinel errors.Is should find (client.ErrRefused, …)
	words string
	err   error
}

func (e *layered) Error() string {
	msg, _ := strings.CutPrefix(e.err.Error(), "httpclient: ")
	return "httpclient: " + e.words + msg
}

func (e *layered) Unwrap() []error {
	if e.class == nil {
		return []error{e.err}
	}
	return []error{e.class, e.err}
}
