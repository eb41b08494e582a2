"""The test API server: HTTP plumbing: the TLS server, request records and the request handler."""

import base64
import dataclasses
import http.server
import json
import re
import socket
import socketserver
import ssl
import struct
import sys
import threading
import traceback
import urllib.parse

from ..certs import peer_subject
from .rbac import Attributes, UserInfo
from .resources import conflict_status_for_fault
from .status import TextError, bad_request, go_quote


@dataclasses.dataclass
class RequestRecord:
    """What one request carried, as :attr:`APIServer.requests` lists it."""

    method: str
    path: str
    query: str
    content_type: str
    authorization: str
    client_cert: dict  # {"cn": str, "o": [str]} of a verified client certificate, or None
    sni: str
    connection_id: int
    user_agent: str
    impersonation: dict  # header name -> list of values, for Impersonate-* headers
    headers: list  # [(name, value)] as received
    body: bytes = b""
    user: str = None  # the authenticated username (after impersonation), None if refused
    status: int = None  # HTTP status sent, None while pending or for a fault without one
    fault: str = None


@dataclasses.dataclass
class Connection:
    """One accepted TLS connection: its id, the SNI sent, and the verified client cert."""

    id: int
    sni: str
    client_cert: dict


@dataclasses.dataclass
class Request:
    """A request as the handlers see it (after TLS, with the body read)."""

    method: str
    path: str
    query: dict
    headers: object  # email.message.Message (case-insensitive get/get_all)
    body: bytes
    body_too_large: bool
    conn: Connection
    user: UserInfo = None
    attrs: Attributes = None


_tls_local = threading.local()


def _sni_callback(ssl_socket, server_name, context):
    _tls_local.sni = server_name


class _HTTPServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer that does the TLS handshake in each connection's own thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, api):
        self.api = api
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, sock, client_address):
        api = self.api
        conn_id = next(api._connection_ids)
        try:
            # As Go's net/http (the real kube-apiserver) does: no Nagle, so a response's headers and body are
            # not held back waiting for the client's delayed ACK (~40 ms a request otherwise).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(api.handshake_timeout)
            _tls_local.sni = None
            tls = api._ssl_context.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError) as e:
            api.tls_errors.append((conn_id, str(e)))
            sock.close()
            return
        peer = tls.getpeercert()
        tls.aicr_conn = Connection(conn_id, _tls_local.sni, peer_subject(peer) if peer else None)
        with api._lock:
            api._open_sockets.add(tls)
        try:
            tls.settimeout(api.idle_timeout)
            self.RequestHandlerClass(tls, client_address, self)
        except (OSError, ssl.SSLError):
            pass
        finally:
            with api._lock:
                api._open_sockets.discard(tls)
            try:
                tls.close()
            except OSError:
                pass

    def shutdown_request(self, request):
        pass  # finish_request closed the TLS socket; the plain one was detached by wrap_socket

    def handle_error(self, request, client_address):
        if self.api.verbose:
            traceback.print_exc()



class _Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; every response has a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "aicr-test-apiserver"
    sys_version = ""

    def do_GET(self):
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def date_time_string(self, timestamp=None):
        hostile = self.server.api.header_values.get("Date")
        return hostile if hostile is not None else super().date_time_string(timestamp)

    def log_message(self, fmt, *args):
        if self.server.api.verbose:
            sys.stderr.write("apiserver: %s\n" % (fmt % args))

    def send_response(self, code, message=None):
        if getattr(self, "_record", None) is not None:
            self._record.status = code
        super().send_response(code, message)

    def _read_body(self, limit):
        """Read the body (Content-Length or chunked). Returns (bytes, too_large)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks, size = [], 0
            while True:
                line = self.rfile.readline(65537)
                length = int(line.split(b";")[0].strip() or b"0", 16)
                if length == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                size += length
                if size > limit:
                    self.close_connection = True
                    return b"", True
                chunks.append(self.rfile.read(length))
                self.rfile.readline(65537)
            return b"".join(chunks), False
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            # Read and drop a bounded amount so the client gets to read the 413, then close.
            self.close_connection = True
            left = length if length <= 4 * limit else 0
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
            return b"", True
        return (self.rfile.read(length) if length else b""), False

    def _dispatch(self):
        api = self.server.api
        conn = self.request.aicr_conn
        url = urllib.parse.urlsplit(self.path)
        self._record = record = RequestRecord(
            method=self.command, path=url.path, query=url.query,
            content_type=self.headers.get("Content-Type"),
            authorization=self.headers.get("Authorization"),
            client_cert=conn.client_cert, sni=conn.sni, connection_id=conn.id,
            user_agent=self.headers.get("User-Agent"),
            impersonation=_impersonation_headers(self.headers),
            headers=list(self.headers.items()))
        api._record(record)
        try:
            self._serve(api, record, url, conn)
        finally:
            self._record = None

    def _serve(self, api, record, url, conn):
        try:
            body, too_large = self._read_body(api.max_body)
        except (ValueError, OSError):
            self.close_connection = True
            self._send_status(bad_request("invalid request body framing").status)
            return
        record.body = body
        path = url.path
        if api.path_prefix and path.startswith(api.path_prefix + "/"):
            path = path[len(api.path_prefix):]  # a Rancher-style proxy in front of the API server
        req = Request(self.command, path, urllib.parse.parse_qs(url.query, keep_blank_values=True),
                      self.headers, body, too_large, conn)
        fault = api._take_fault(self.command)
        if fault:
            record.fault = fault
            self._fault(fault, req)
            return
        if path in api.answers:  # a canned answer (APIServer.answers): a misbehaving server
            self._send_json(*api.answers[path])
            return
        code, payload = api._respond(req)
        record.user = req.user.name if req.user else None
        self._send_json(code, payload)

    def _send_json(self, code, payload):
        data, content_type = _encode_payload(payload)
        self._send(code, data, content_type,
                   [("X-Content-Type-Options", "nosniff")] if isinstance(payload, TextError) else ())

    def _send_status(self, body):
        self._send_json(body["code"], body)

    def _send(self, code, data, content_type, extra_headers=()):
        try:
            hostile = self.server.api.header_values
            if "Content-Type" in hostile or "Content-Length" in hostile:
                self.close_connection = True
            self.send_response(code)
            self.send_header("Content-Type", hostile.get("Content-Type", content_type))
            self.send_header("Content-Length", hostile.get("Content-Length", str(len(data))))
            self.send_header("Cache-Control", "no-cache, private")
            for name, value in extra_headers:
                self.send_header(name, value)
            for text in self.server.api.warnings:  # apiserver's warning.AddWarning -> one header each
                self.send_header("Warning", '299 - "%s"' % text.replace("\\", "\\\\").replace('"', '\\"'))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    # ---- faults (see APIServer.fault)

    def _fault(self, kind, req):
        api = self.server.api
        self.close_connection = True
        if kind == "reset-store-later":
            late = threading.Timer(api.fault_delay, lambda: api.late_answers.append(api._respond(req)[0]))
            late.daemon = True
            late.start()
            kind = "reset"
        if kind.startswith("store-"):
            api._respond(req)  # carried out; its answer is lost
            kind = kind[len("store-"):]
            if kind == "close":
                return
            if kind == "conflict":
                self._send_status(conflict_status_for_fault())
                return
        if kind in _ERROR_ANSWERS:
            code, data, content_type, headers = _ERROR_ANSWERS[kind]
            self._send(code, data, content_type, headers)
            return
        if kind == "hang":
            api._stopping.wait(api.fault_hang_seconds)
            return
        if kind == "reset":
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if kind == "html-500":
            page = (b"<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n"
                    b"<center><h1>500 Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
                    b"</body>\r\n</html>\r\n")
            self._send(500, page, "text/html")
            return
        if kind == "endless-pages":
            token = base64.b64encode(b"%d:" % api.next_page() + b"x" * 6144).decode()
            page = {"kind": "RuntimeRolloutList", "apiVersion": "operator.aicr.run/v1alpha1",
                    "metadata": {"resourceVersion": "1", "continue": token}, "items": []}
            self._send(200, json.dumps(page).encode(), "application/json")
            return
        if kind == "redirect":
            target = "https://sso.example.invalid/login?rd=" + urllib.parse.quote(req.path, safe="")
            self._send(302, b'<a href="%s">Found</a>.\n' % target.encode(), "text/html; charset=utf-8",
                       [("Location", target)])
            return
        try:
            if kind == "huge":
                self._write_head(200, "application/json", api.fault_huge_bytes)
                chunk, left = b" " * 65536, api.fault_huge_bytes
                while left > 0 and not api._stopping.is_set():
                    self.wfile.write(chunk[:left])
                    left -= min(left, len(chunk))
                return
            code, payload = api._respond(req)
            data, content_type = _encode_payload(payload)
            if kind in _FRAMINGS:
                self.wfile.write(_FRAMINGS[kind](code, content_type, data))
                return
            if kind == "glued-408":
                self.wfile.write(_head(code, [b"Content-Type: " + content_type.encode(),
                                              b"Content-Length: %d" % len(data)]) + data
                                 + _head(408, [b"Content-Length: 0", b"Connection: close"]))
                self.close_connection = False
                return
            self._write_head(code, content_type, len(data))
            if kind == "idle-close":
                self.wfile.write(data)
            elif kind == "close-mid-body":
                self.wfile.write(data[:len(data) // 2])
            elif kind == "trickle":
                for i in range(len(data)):
                    if api._stopping.wait(api.fault_delay):
                        return
                    self.wfile.write(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass

    def _write_head(self, code, content_type, length):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.end_headers()


def _json_bytes(value):
    return json.dumps(value, separators=(",", ":")).encode("utf-8") + b"\n"


def _nginx_page(code, text):
    return (b"<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1></center>\r\n"
            b"<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n" % (code, text, code, text))


# fault -> (code, body, content type, extra headers): error answers a server or a proxy in front of it gives
# (kube-apiserver's bodies from k8s.io/apimachinery pkg/api/errors and apiserver/pkg/server/filters)
_ERROR_ANSWERS = {
    # storage.NewInternalError of an etcd timeout, as the registry answers it (the commit may still happen)
    "etcd-500": (500, _json_bytes({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Internal error occurred: etcdserver: request timed out", "reason": "InternalError",
        "details": {"causes": [{"message": "etcdserver: request timed out"}]}, "code": 500}),
        "application/json", ()),
    # filters/timeout.go: apierrors.NewTimeoutError; the handler goes on in the background
    "timeout-504": (504, _json_bytes({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Timeout: request did not complete within requested timeout - context deadline exceeded",
        "reason": "Timeout", "details": {}, "code": 504}), "application/json", ()),
    "bad-gateway-502": (502, _nginx_page(502, b"Bad Gateway"), "text/html", ()),
    "unavailable-503": (503, b"", "text/plain", ()),
    # filters/maxinflight.go tooManyRequests (http.Error): sent without calling the handler
    "too-many-429": (429, b"Too many requests, please try again later.\n", "text/plain; charset=utf-8",
                     (("Retry-After", "1"), ("X-Content-Type-Options", "nosniff"))),
}


def _head(code, lines, version=b"HTTP/1.1"):
    return b"%s %d %s\r\n%s\r\n" % (version, code, b"OK" if code == 200 else b"Status", b"".join(
        line + b"\r\n" for line in lines))


def _chunks(data, size=7):
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(data[i:i + size]), data[i:i + size])
                    for i in range(0, len(data), size)) + b"0\r\nX-Trailer: t\r\n\r\n"


# fault -> (code, content type, body) -> the bytes of the whole response, written at once (RFC 9112 framings)
_FRAMINGS = {
    "chunked": lambda code, kind, data: _head(code, [b"Content-Type: " + kind.encode(),
                                                     b"Transfer-Encoding: chunked", b"Connection: close"])
    + _chunks(data),
    "interim": lambda code, kind, data: _head(100, []) + _head(103, [b"Link: </x>; rel=preload"])
    + _head(code, [b"Content-Type: " + kind.encode(), b"Content-Length: %d" % len(data), b"Connection: close"])
    + data,
    "http10-close": lambda code, kind, data: _head(code, [b"Content-Type: " + kind.encode()], b"HTTP/1.0") + data,
    "folded-header": lambda code, kind, data: _head(code, [b"Content-Type: " + kind.encode(), b"X-Note: a",
                                                           b"  folded", b"Content-Length: %d" % len(data),
                                                           b"Connection: close"]) + data,
    "bad-chunk": lambda code, kind, data: _head(code, [b"Content-Type: " + kind.encode(),
                                                       b"Transfer-Encoding: chunked"]) + b"zz\r\n" + data,
    "two-lengths": lambda code, kind, data: _head(code, [b"Content-Type: " + kind.encode(),
                                                         b"Content-Length: %d" % len(data),
                                                         b"Content-Length: %d" % (len(data) + 1)]) + data,
}


# Go's encoding/json escapes these inside strings (HTML-safe output), as kube-apiserver's bodies show.
_GO_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _encode_payload(payload):
    """(bytes, content type) of a response: compact JSON as Go writes it, one newline after; or
    the plain text of a :class:`TextError`."""
    if isinstance(payload, TextError):
        return payload.text.encode("utf-8"), "text/plain; charset=utf-8"
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    plain = text.isascii()  # the regular expressions cost a 19 MB list a second; most answers need neither
    if not plain or "<" in text or ">" in text or "&" in text:
        text = re.sub("[<>&\u2028\u2029]", lambda m: _GO_JSON_ESCAPES[m.group(0)], text)
    if not plain:
        # A lone surrogate (a hostile server's "\ud800"; Go would send U+FFFD) goes out as its JSON escape.
        text = re.sub("[\ud800-\udfff]", lambda m: "\\u%04x" % ord(m.group(0)), text)
    return text.encode("utf-8") + b"\n", "application/json"


def _page(items, meta, query, rv):
    """``limit`` and ``continue`` as the storage layer pages a list (apiserver ``storage/etcd3`` and
    ``storage.EncodeContinue``): items in key order after the token's ``start``, at most ``limit`` of them;
    ``metadata.continue`` (base64 JSON {"v", "rv", "start"}) and ``remainingItemCount`` when more remain.
    A token that does not decode is 400 ``continue key is not valid``. ``items`` are in key order already."""
    limit_text = query.get("limit", ["0"])[0] or "0"
    try:
        limit = int(limit_text)
    except ValueError:
        raise bad_request("limit: Invalid value: %s" % go_quote(limit_text))
    start = ""
    token = query.get("continue", [""])[0]
    if token:
        try:
            decoded = json.loads(base64.b64decode(token, validate=True).decode("utf-8"))
            start, rv = decoded["start"], str(decoded["rv"])
            if decoded.get("v") != "meta.k8s.io/v1" or not isinstance(start, str):
                raise ValueError(start)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise bad_request("continue key is not valid: incorrect encoded start resourceVersion (version "
                              "meta.k8s.io/v1)")
    key = lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])  # noqa: E731
    after = [obj for obj in items if "\x00".join(key(obj)) >= start]
    meta = dict(meta, resourceVersion=rv)
    if limit <= 0 or len(after) <= limit:
        return after, meta
    page, rest = after[:limit], after[limit:]
    next_start = "\x00".join(key(rest[0]))
    meta["continue"] = base64.b64encode(json.dumps(
        {"v": "meta.k8s.io/v1", "rv": int(rv), "start": next_start}).encode("utf-8")).decode("ascii")
    meta["remainingItemCount"] = len(rest)
    return page, meta


def _impersonation_headers(headers):
    found = {}
    for name, value in headers.items():
        if name.lower().startswith("impersonate-"):
            found.setdefault(name, []).append(value)
    return found
