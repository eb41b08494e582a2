"""A TLS front for the real kube-apiserver that answers SelfSubjectReview (test-only code).

kube-apiserver v1.20 has no SelfSubjectReview (``authentication.k8s.io/v1``, every user
may create one from 1.28), and approve, revoke and acknowledge learn who writes from
it. This front stands in for that one answer and nothing else:

- it authenticates the caller as kube-apiserver does: a client certificate verified
  against the cluster CA (user = CN, groups = O); a bearer token through a
  TokenReview on the real server (an unknown token is the real server's 401 Status
  ``Unauthorized``); no credential is ``system:anonymous``;
- it answers ``POST /apis/authentication.k8s.io/v1/selfsubjectreviews`` itself with the
  user it authenticated (201, as ``pkg/registry/authentication/selfsubjectreview`` does),
  except for an anonymous caller, which is forwarded (the real server's 403);
- it forwards every other request to the real server as the cluster admin with
  ``Impersonate-User`` and ``Impersonate-Group`` set to that user, so RBAC, storage,
  patches, dry-run and admission (the webhook sees the impersonated user) are all the
  real server's; the answer comes back byte for byte with the real server's headers
  (``Date`` included: the plugin takes its clock from it).

Two more things the real server does not offer, for tests: a request log
(:attr:`IdentityFront.requests`, :class:`Record`), and :meth:`IdentityFront.interpose`,
which runs another client's action (for example a real PATCH as bob) when a matching
request arrives, before it is forwarded or after the real server answered it: "another
client's write between the command's read and its write".

Not forwarded: ``Impersonate-*`` headers from the caller (refused with 400 here; the
plugin never sends them), ``Impersonate-Uid`` (1.22+), ``Authorization``.
"""

import collections
import http.client
import http.server
import itertools
import json
import secrets
import socketserver
import ssl
import threading
import urllib.parse

try:  # imported as tests.support.identity_front
    from .certs import peer_subject
except ImportError:  # imported as a top-level module (tests/support on sys.path)
    from certs import peer_subject

MAX_BODY = 3 * 1024 * 1024          # kube-apiserver's default --max-request-body-bytes
MAX_ANSWER = 64 * 1024 * 1024
TIMEOUT = 30.0
SELF_SUBJECT_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
HOP_HEADERS = ("connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", "te",
               "trailer", "upgrade")

#: The authenticated caller: username, uid ("" for certificates), groups (with system:authenticated).
Identity = collections.namedtuple("Identity", "username uid groups")


class Record:
    """One request through the front: ``method``, ``path``, ``query``, ``user`` (username or None when
    refused), ``status`` (HTTP status answered), ``body`` (bytes sent), ``content_type``, ``answer``, and
    ``connection`` (a number per TLS connection, in the order they were accepted)."""

    def __init__(self, method, path, query, content_type, body, connection=None):
        self.method, self.path, self.query, self.content_type, self.body = method, path, query, content_type, body
        self.connection = connection
        self.user = None
        self.status = None
        self.answer = b""

    def __repr__(self):
        return "Record(%s %s?%s as %s -> %s)" % (self.method, self.path, self.query, self.user, self.status)


def status_body(code, reason, message):
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "aicr-identity-front"
    sys_version = ""

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        self.server.owner._handle(self)

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def answer(self, code, body, headers=()):
        data = body if isinstance(body, bytes) else (json.dumps(body, separators=(",", ":")) + "\n").encode()
        self.send_response_only(code)
        names = {k.lower() for k, _ in headers}
        if "content-type" not in names:
            self.send_header("Content-Type", "application/json")
        if "date" not in names:
            self.send_header("Date", self.date_time_string())
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        return data


class TLSServer(http.server.ThreadingHTTPServer):
    """An HTTPS server on 127.0.0.1 (a free port) for the real tier's helpers: ``owner.ssl_context`` serves
    TLS, the handshake runs in each connection's own thread (bounded by ``timeout`` seconds), and
    ``owner.accepted(tls)``, when the owner has it, sees each connection first. ``start()`` serves in a
    daemon thread and returns the URL; ``stop()`` ends it."""

    daemon_threads = True

    def __init__(self, owner, handler, timeout=TIMEOUT):
        self.owner, self.tls_timeout = owner, timeout
        super().__init__(("127.0.0.1", 0), handler)
        self._thread = None

    def server_bind(self):  # no reverse DNS lookup of the address
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, sock, client_address):
        try:
            sock.settimeout(self.tls_timeout)
            tls = self.owner.ssl_context.wrap_socket(sock, server_side=True)
        except (OSError, ssl.SSLError):
            sock.close()
            return
        try:
            if hasattr(self.owner, "accepted"):
                self.owner.accepted(tls)
            self.RequestHandlerClass(tls, client_address, self)
        except (OSError, ssl.SSLError):
            pass
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def shutdown_request(self, request):
        pass  # finish_request closed the TLS socket

    def start(self, name):
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, name=name,
                                        daemon=True)
        self._thread.start()
        return "https://127.0.0.1:%d" % self.server_address[1]

    def stop(self):
        self.shutdown()
        self.server_close()
        self._thread.join(5)



class IdentityFront:
    """The front for one :class:`tests.support.real_apiserver.RealAPIServer` (started): ``server``. Its serving
    certificate is issued by the server's CA (``server.ca``) into ``folder``, so a kubeconfig with the
    cluster's CA trusts it. Attributes after :meth:`start`: ``url``, ``port``, ``requests``."""

    def __init__(self, server, folder):
        try:
            from . import certs
        except ImportError:
            import certs
        self.server = server
        serving = certs.write_server_cert(server.ca, folder, stem="front")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(serving.cert, serving.key)
        ctx.load_verify_locations(server.ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL   # asked for; verified against the cluster CA when sent
        self.ssl_context = ctx
        admin = server.client_cert_files("admin")
        self._upstream = ssl.create_default_context(cafile=server.ca_file)
        self._upstream.load_cert_chain(admin.cert, admin.key)
        self._lock = threading.Lock()
        self._requests = []
        self._interpositions = []
        self._tokens = {}
        self._connections = itertools.count(1)
        self.url = self.port = None
        self._httpd = None

    # ---- lifecycle

    def start(self):
        self._httpd = TLSServer(self, _Handler)
        self.port = self._httpd.server_address[1]
        self.url = self._httpd.start("aicr-identity-front")
        return self

    def stop(self):
        if self._httpd is not None:
            self._httpd.stop()
            self._httpd = None

    def accepted(self, tls):
        """Each TLS connection: its verified client certificate (or None) and its number."""
        tls.aicr_peer = tls.getpeercert() or None
        tls.aicr_connection = next(self._connections)

    # ---- for tests

    @property
    def requests(self):
        """A copy of the request log (list of :class:`Record`, oldest first)."""
        with self._lock:
            return list(self._requests)

    def clear(self):
        """Forget the request log and any interposition not yet run."""
        with self._lock:
            self._requests.clear()
            self._interpositions.clear()

    def interpose(self, action, method="PATCH", path=None, when="before", count=1):
        """Run ``action(record)`` for the next ``count`` requests with ``method`` (and, when given, whose
        path is ``path``), after authentication: ``when`` ``"before"`` the request is forwarded (another
        client's write lands before a command's PATCH is judged) or ``"after"`` the real server answered
        it and before the answer is sent on (a change right after a command's read). ``action`` runs in
        the request's thread; what it raises is answered as a 500 Status."""
        if when not in ("before", "after"):
            raise ValueError("when must be before or after")
        with self._lock:
            self._interpositions.append([method, path, when, count, action])

    def log(self, record):
        """Add a :class:`Record` of the test's own (an interposed change, say) to the request log."""
        with self._lock:
            self._requests.append(record)

    def _take_interposition(self, record, when):
        with self._lock:
            for entry in self._interpositions:
                method, path, at, count, action = entry
                if (record.method, at) == (method, when) and path in (None, record.path):
                    entry[3] -= 1
                    if entry[3] <= 0:
                        self._interpositions.remove(entry)
                    return action
        return None

    # ---- requests

    def _handle(self, handler):
        url = urllib.parse.urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            handler.close_connection = True
            handler.answer(413, status_body(413, "RequestEntityTooLarge", "Request entity too large: limit is %d"
                                            % MAX_BODY))
            return
        body = handler.rfile.read(length) if length else b""
        record = Record(handler.command, url.path, url.query, handler.headers.get("Content-Type"), body,
                        handler.connection.aicr_connection)
        with self._lock:
            self._requests.append(record)
        try:
            code, data, headers = self._respond(handler, record)
        except Exception as exc:  # a bug here or in an interposed action: a 500 Status, never a hang
            code, data, headers = 500, status_body(500, "InternalError", "identity front: %r" % (exc,)), ()
        record.status = code
        record.answer = handler.answer(code, data, headers)

    def _respond(self, handler, record):
        if any(k.lower().startswith("impersonate-") for k in handler.headers.keys()):
            return 400, status_body(400, "BadRequest", "the identity front does not pass on Impersonate-* headers"), ()
        identity = self._authenticate(handler)
        if identity is None:
            return 401, status_body(401, "Unauthorized", "Unauthorized"), ()
        record.user = identity.username
        if record.path.rstrip("/") == SELF_SUBJECT_REVIEWS and identity.username != ANONYMOUS:
            if record.method != "POST":
                return 405, dict(status_body(405, "MethodNotAllowed", "the server does not allow this method on the "
                                                                      "requested resource"), details={}), ()
            info = {"username": identity.username}
            if identity.uid:
                info["uid"] = identity.uid
            info["groups"] = list(identity.groups)
            return 201, {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                         "metadata": {"creationTimestamp": None}, "status": {"userInfo": info}}, ()
        action = self._take_interposition(record, "before")
        if action is not None:
            action(record)
        answer = self._forward(handler, record, identity)
        action = self._take_interposition(record, "after")
        if action is not None:
            action(record)
        return answer

    def _authenticate(self, handler):
        """Identity, or None for a credential the real server would answer 401."""
        peer = handler.connection.aicr_peer
        if peer:
            subject = peer_subject(peer)
            if subject["cn"]:
                return Identity(subject["cn"], "", tuple(subject["o"]) + (AUTHENTICATED,))
        scheme, _, credential = (handler.headers.get("Authorization") or "").strip().partition(" ")
        if scheme.lower() == "bearer" and credential.strip():
            return self._token_review(credential.strip().split(" ")[0])
        if scheme.lower() == "basic":
            return None  # the real server is started without basic auth
        return Identity(ANONYMOUS, "", (UNAUTHENTICATED,))

    def _token_review(self, token):
        with self._lock:
            for known, identity in self._tokens.items():
                if secrets.compare_digest(known.encode(), token.encode()):
                    return identity
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}
        code, answer = self.server.request("POST", TOKEN_REVIEWS, review, user="admin")
        if code != 201 or not isinstance(answer, dict):
            raise RuntimeError("TokenReview answered %s: %s" % (code, answer))
        status = answer.get("status") or {}
        if not status.get("authenticated"):
            return None
        user = status.get("user") or {}
        identity = Identity(user.get("username", ""), user.get("uid", ""), tuple(user.get("groups") or ()))
        with self._lock:
            self._tokens[token] = identity
        return identity

    def _forward(self, handler, record, identity):
        target = record.path + ("?" + record.query if record.query else "")
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self._upstream, timeout=TIMEOUT)
        try:
            conn.putrequest(record.method, target, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", "127.0.0.1:%d" % self.server.port)
            for name, value in handler.headers.items():
                if name.lower() not in HOP_HEADERS + ("host", "authorization", "accept-encoding"):
                    conn.putheader(name, value)
            conn.putheader("Impersonate-User", identity.username)
            for group in identity.groups:
                if group not in (AUTHENTICATED, UNAUTHENTICATED):  # the server adds these itself
                    conn.putheader("Impersonate-Group", group)
            conn.putheader("Content-Length", str(len(record.body)))
            conn.endheaders(record.body or None)
            resp = conn.getresponse()
            data = resp.read(MAX_ANSWER + 1)
            if len(data) > MAX_ANSWER:
                raise RuntimeError("the real server's answer is larger than %d bytes" % MAX_ANSWER)
            headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_HEADERS]
            return resp.status, data, headers
        finally:
            conn.close()
