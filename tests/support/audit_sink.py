"""The real tier's audit webhook backend: kube-apiserver's own request log, and a hook to land another
client's write while a command's request waits (test-only code).

kube-apiserver sends every audited request's events to this HTTP server (``--audit-webhook-config-file``,
``--audit-webhook-mode=blocking``: each event is sent while the request waits, from the request's own
goroutine; ``staging/src/k8s.io/apiserver/pkg/endpoints/filters/audit.go`` ``WithAudit``). Nothing here is
on the path of a request: it sees events, it cannot change a request or its answer. It gives the tests:

- :attr:`AuditSink.requests`: one :class:`Record` per request that completed (stage ``ResponseComplete``),
  in the order the server finished them, for the users and resources of :func:`policy`;
- :meth:`AuditSink.interpose`: run an action (real requests by another client) when a matching request
  reaches the server, before it is handled (stage ``RequestReceived``: "another client's write lands
  before the command's PATCH"), or when it has been handled and before its answer is complete on the
  wire (stage ``ResponseComplete``: the server finishes the response only after the blocking backend
  returned; "a change right after the command's read").

What an audit event does not carry, and so a :class:`Record` lacks: the request's headers (its
Content-Type) and which TCP connection it came on.
"""

import http.server
import json
import socketserver
import threading
import urllib.parse

MAX_EVENTS_BYTES = 32 * 1024 * 1024
_METHODS = {"get": "GET", "list": "GET", "watch": "GET", "create": "POST", "update": "PUT", "patch": "PATCH",
            "delete": "DELETE", "deletecollection": "DELETE"}


def policy():
    """The audit Policy (``audit.k8s.io/v1``): what the tier's tests look at, at level ``Request`` (the
    request body, for a PATCH the patch as sent), stages RequestReceived and ResponseComplete."""
    return {
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
        "omitStages": ["ResponseStarted"],
        "rules": [
            {"level": "Request", "resources": [{"group": "operator.aicr.run",
                                                "resources": ["runtimerollouts", "clusterruntimes"]}]},
            {"level": "Request", "resources": [{"group": "", "resources": ["configmaps"]}],
             "namespaces": ["aicr-system"]},
            {"level": "Request", "resources": [{"group": "authentication.k8s.io",
                                                "resources": ["selfsubjectreviews"]}]},
            {"level": "None"},
        ],
    }


class Record:
    """One request as kube-apiserver's audit event tells it: ``method`` (HTTP, from the verb), ``path``,
    ``query``, ``user`` (who the server judged: the impersonated user if any, else the authenticated one),
    ``authenticated`` (the authenticated username), ``user_agent``, ``status`` (the response code),
    ``body`` (bytes: the request object as JSON; for a PATCH the patch as sent), ``event`` (the whole event).
    ``content_type`` and ``connection`` are None (not in an audit event)."""

    content_type = None
    connection = None

    def __init__(self, method, path, query, user, status, body, event=None):
        self.method, self.path, self.query, self.user, self.status, self.body = method, path, query, user, status, body
        self.event = event or {}
        self.authenticated = (self.event.get("user") or {}).get("username")
        self.user_agent = self.event.get("userAgent")

    @classmethod
    def from_event(cls, event):
        url = urllib.parse.urlsplit(event.get("requestURI") or "")
        who = event.get("impersonatedUser") or event.get("user") or {}
        body = event.get("requestObject")
        data = json.dumps(body).encode("utf-8") if body is not None else b""
        return cls(_METHODS.get(event.get("verb"), (event.get("verb") or "").upper()), url.path, url.query,
                   who.get("username"), (event.get("responseStatus") or {}).get("code"), data, event)

    def __repr__(self):
        return "Record(%s %s?%s as %s -> %s)" % (self.method, self.path, self.query, self.user, self.status)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(min(length, MAX_EVENTS_BYTES))
        try:
            events = json.loads(data.decode("utf-8")).get("items") or []
        except ValueError:
            events = []
        failed = None
        for event in events:
            try:
                self.server.owner.receive(event)
            except Exception as exc:  # an interposed action failed: the test sees it in .errors
                failed = exc
        body = b"{}" if failed is None else json.dumps({"error": repr(failed)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self):  # no reverse DNS lookup of the address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class AuditSink:
    """The audit webhook backend on ``http://127.0.0.1:<port>`` (:attr:`url` after :meth:`start`)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._records = []
        self._interpositions = []
        self.errors = []
        self.url = None
        self._httpd = None
        self._thread = None

    def start(self):
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="aicr-audit-sink", daemon=True)
        self._thread.start()
        self.url = "http://127.0.0.1:%d/audit" % self._httpd.server_address[1]
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def kubeconfig(self):
        """The ``--audit-webhook-config-file`` contents (a kubeconfig naming this server)."""
        return {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "audit", "cluster": {"server": self.url}}],
                "users": [{"name": "apiserver", "user": {}}],
                "contexts": [{"name": "audit", "context": {"cluster": "audit", "user": "apiserver"}}],
                "current-context": "audit"}

    # ---- for tests

    @property
    def requests(self):
        """A copy of the completed requests (list of :class:`Record`), oldest first."""
        with self._lock:
            return list(self._records)

    def clear(self):
        """Forget the log, any interposition not yet run and any error."""
        with self._lock:
            self._records.clear()
            self._interpositions.clear()
            self.errors.clear()

    def log(self, record):
        """Add a record of the test's own (an interposed change) to the log."""
        with self._lock:
            self._records.append(record)

    def interpose(self, action, method="PATCH", path=None, when="before", match=None, count=1):
        """Run ``action(record)`` for the next ``count`` requests with ``method`` (and ``path``, and for which
        ``match(record)`` is true, when given): ``"before"`` the server handles it, or ``"after"`` it handled
        it and before the answer is complete. ``action`` runs in the backend's thread while the request waits; what it
        raises is kept in :attr:`errors` (the request then goes on)."""
        if when not in ("before", "after"):
            raise ValueError("when must be before or after")
        with self._lock:
            self._interpositions.append([method, path, when, match, count, action])

    # ---- events

    def receive(self, event):
        stage = event.get("stage")
        if stage not in ("RequestReceived", "ResponseComplete"):
            return
        record = Record.from_event(event)
        when = "before" if stage == "RequestReceived" else "after"
        if stage == "ResponseComplete":
            with self._lock:
                self._records.append(record)
        action = self._take(record, when)
        if action is not None:
            try:
                action(record)
            except Exception as exc:
                with self._lock:
                    self.errors.append(exc)
                raise

    def _take(self, record, when):
        with self._lock:
            for entry in self._interpositions:
                method, path, at, match, count, action = entry
                if (record.method, at) == (method, when) and path in (None, record.path) \
                        and (match is None or match(record)):
                    entry[4] -= 1
                    if entry[4] <= 0:
                        self._interpositions.remove(entry)
                    return action
        return None
