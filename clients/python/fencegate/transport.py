"""The registry's HTTP API for the client (docs/api.md, api/openapi.yaml),
over http.client: one connection per call, JSON in and out, the bearer
token on every call.

Every answer is mapped onto the client's contract as the Go SDK's
httpclient maps it: a registry code comes back as its RegistryError class
(UnavailableError is also an OutcomeUnknown); a refusal by the HTTP layer
(BAD_REQUEST, UNAUTHENTICATED, FORBIDDEN, FORBIDDEN_RESOURCE, …) is
Refused; everything that may or may not have been applied (a timeout, a
reset connection, a 5xx without a registry code, an answer that does not
parse) is OutcomeUnknown.
"""

import http.client
import json
import socket
import ssl
import urllib.parse

from .errors import REGISTRY_ERRORS, BadAnswer, BusyError, OutcomeUnknown, Refused
from .grant import Issued

RESPONSE_BYTES_MAX = 1 << 20
"""The largest answer body read, 1 MiB (httpclient.ResponseBytesMax)."""

REFUSED_CODES = frozenset(("BAD_REQUEST", "TOO_LARGE", "UNAUTHENTICATED", "FORBIDDEN", "METHOD_NOT_ALLOWED", "MALFORMED",
                           "FORBIDDEN_RESOURCE", "UNSUPPORTED_MEDIA_TYPE"))
"""The HTTP layer's definite refusals: the registry never acted on the call."""


class Transport:
    """A client of one registry at url ("http://host:port" or https),
    authenticated by a bearer token (serve --token-file; `serve --dev`'s
    is fencegate-dev-token) or, over https, by the client certificate of
    ssl_context. Safe for concurrent use: each call opens its own
    connection."""

    def __init__(self, url, token=None, ssl_context=None):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname or u.path not in ("", "/") or u.query:
            raise ValueError("fencegate: registry URL %r: want http(s)://host[:port]" % url)
        self.url, self.token = url.rstrip("/"), token
        self._https = u.scheme == "https"
        self._host, self._port = u.hostname, u.port
        self._ssl = ssl_context if ssl_context is not None else (ssl.create_default_context() if self._https else None)

    # --- the lease calls ----------------------------------------------------

    def acquire(self, request, timeout):
        """POST /v1/acquire with request (a dict of the wire's AcquireRequest)."""
        body = {k: v for k, v in request.items() if v or k not in ("ttlMs", "waitMs")}
        return Issued.from_json(self.call("POST", "/v1/acquire", body, timeout))

    def renew(self, grant, timeout):
        """POST /v1/renew for grant's lease."""
        return Issued.from_json(self.call("POST", "/v1/renew", {"resource": grant.resource, "lease": grant.lease}, timeout))

    def status(self, grant, timeout):
        """POST /v1/status: the linearizable state of grant, with a fresh proof."""
        return Issued.from_json(self.call("POST", "/v1/status", {"grant": grant.text.decode("ascii")}, timeout))

    def release(self, grant, timeout):
        """POST /v1/release for grant's lease."""
        self.call("POST", "/v1/release", {"resource": grant.resource, "lease": grant.lease}, timeout)

    # --- lock sets and read/write locks ------------------------------------------

    def acquire_set(self, request, timeout):
        """POST /v1/lockset/acquire with request (a dict of the wire's
        LockSetRequest): every member's Issued, in member order."""
        body = {k: v for k, v in request.items() if v or k not in ("ttlMs", "waitMs")}
        return self._issued_set("/v1/lockset/acquire", body, len(request["members"]), timeout)

    def renew_set(self, grants, timeout):
        """POST /v1/lockset/renew: every member's lease renewed in one
        registry transaction, or none (a definite refusal names the member
        that ended)."""
        return self._issued_set("/v1/lockset/renew", {"leases": _leases(grants)}, len(grants), timeout)

    def release_set(self, grants, timeout):
        """POST /v1/lockset/release: every member's lease released in one transaction."""
        self.call("POST", "/v1/lockset/release", {"leases": _leases(grants)}, timeout)

    def downgrade(self, grant, request_id, timeout):
        """POST /v1/downgrade: grant's write lease becomes a reader's lease
        on resource/_read, under request_id (a retry answers the same grant)."""
        return Issued.from_json(self.call("POST", "/v1/downgrade", {"resource": grant.resource, "lease": grant.lease,
                                                                    "requestId": request_id}, timeout))

    def _issued_set(self, path, body, n, timeout):
        out = self.call("POST", path, body, timeout)
        members = out.get("members")
        if not isinstance(members, list) or len(members) != n:
            raise BadAnswer("fencegate: POST %s: %s members answered, not %d"
                            % (path, len(members) if isinstance(members, list) else None, n))
        issued = []
        for i, m in enumerate(members):
            if not isinstance(m, dict):
                raise BadAnswer("fencegate: POST %s: members[%d] is not an object" % (path, i))
            try:
                issued.append(Issued.from_json(m))
            except BadAnswer as e:
                raise BadAnswer("fencegate: POST %s: members[%d]: %s" % (path, i, e)) from None
        return issued

    def query_request(self, request_id, timeout):
        """GET /v1/requests/{id}: what became of an acquire whose answer was lost."""
        return Issued.from_json(self.call("GET", "/v1/requests/" + urllib.parse.quote(request_id, safe=""), None, timeout))

    # --- lock views -----------------------------------------------------------

    def lock_status(self, resource, timeout):
        """GET /v1/locks/{resource}: holder, fences, waiters (a dict)."""
        return self.call("GET", "/v1/locks/" + resource, None, timeout)

    def watch_lock(self, resource, after_revision, wait_ms, timeout):
        """GET /v1/locks/{resource}?waitMs=&afterRevision=: answers once the
        lock differs from what was seen at after_revision, or after wait_ms."""
        q = urllib.parse.urlencode({"waitMs": int(wait_ms), "afterRevision": int(after_revision)})
        return self.call("GET", "/v1/locks/%s?%s" % (resource, q), None, timeout)

    # --- the exchange -----------------------------------------------------------

    def _connection(self, timeout):
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout, context=self._ssl)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def call(self, method, path, body, timeout):
        """One exchange: body (a dict, or None) as JSON, the answer's JSON
        object, or the exception the answer means."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        conn = self._connection(timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read(RESPONSE_BYTES_MAX + 1)
            status = resp.status
        except (OSError, http.client.HTTPException, socket.timeout) as e:
            raise OutcomeUnknown("fencegate: %s %s: outcome unknown: %s" % (method, path, e)) from e
        finally:
            conn.close()
        if len(raw) > RESPONSE_BYTES_MAX:
            raise BadAnswer("fencegate: %s %s: answer above %d bytes" % (method, path, RESPONSE_BYTES_MAX))
        if status != 200:
            raise answer_error(status, raw)
        try:
            out = json.loads(raw)
        except ValueError as e:
            raise BadAnswer("fencegate: %s %s: %s" % (method, path, e)) from None
        if not isinstance(out, dict):
            raise BadAnswer("fencegate: %s %s: answer is not a JSON object" % (method, path))
        return out


def answer_error(status, raw):
    """The exception an error answer (HTTP status, body bytes) means."""
    try:
        body = json.loads(raw)
        code, message = body.get("code", ""), body.get("message", "")
    except (ValueError, AttributeError):
        body, code, message = {}, "", raw[:200].decode("utf-8", "replace").strip()
    if not isinstance(code, str) or not code:
        return OutcomeUnknown("fencegate: outcome unknown: HTTP %d: %s" % (status, message))
    cls = REGISTRY_ERRORS.get(code)
    if cls is not None:
        if issubclass(cls, BusyError):
            return cls(message, status, busy=body.get("busy"))
        return cls(message, status)
    if code in REFUSED_CODES:
        return Refused(code, message, status)
    return OutcomeUnknown("fencegate: outcome unknown: %s (HTTP %d): %s" % (code, status, message))


def _leases(grants):
    """Each member's lease, in member order (wire.LeaseRequest)."""
    return [{"resource": g.resource, "lease": g.lease} for g in grants]
