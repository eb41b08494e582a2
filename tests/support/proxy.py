"""Forwarding proxies for the tests (test-only code): HTTP CONNECT and SOCKS5, with a request log.

Both listen on 127.0.0.1, tunnel bytes both ways once the handshake is done, and record
what each client asked for, so a test can show that a connection really went through
the proxy (and where to)::

    with TunnelProxy("http", routes={"api.example.invalid:6443": ("127.0.0.1", port)}) as p:
        p.url                 # http://127.0.0.1:PORT
        p.records             # [ProxyRecord(kind, target, proxy_authorization, user)]

``routes`` maps a requested ``host:port`` to the address really dialled (a name that
does not resolve can so reach a test server); other targets are dialled as asked.
``credentials=(user, password)`` makes the proxy demand them (407 / SOCKS5 method 2).
``kind="https"`` is the CONNECT proxy spoken to over TLS (``tls=CertFiles`` of its certificate); its
records also hold the TLS server name the client sent (``sni``) and whether it showed a client
certificate (``client_cert``: the proxy asks for one, signed by ``client_ca`` when given).

Protocols: RFC 7231 section 4.3.6 (CONNECT), RFC 1928 and RFC 1929 (SOCKS5).
"""

import base64
import dataclasses
import select
import socket
import socketserver
import ssl
import struct
import threading


@dataclasses.dataclass
class ProxyRecord:
    """One tunnel request: ``kind`` http/socks5, ``target`` host:port as asked, the proxy credentials sent."""

    kind: str
    target: str
    proxy_authorization: str = None
    user: str = None
    sni: str = None
    client_cert: bool = False


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class TunnelProxy:
    """An HTTP CONNECT (``kind="http"``) or SOCKS5 (``kind="socks5"``) proxy on 127.0.0.1."""

    def __init__(self, kind="http", routes=None, credentials=None, tls=None, client_ca=None):
        if kind not in ("http", "https", "socks5"):
            raise ValueError("kind must be http, https or socks5")
        if (kind == "https") != (tls is not None):
            raise ValueError("an https proxy needs tls=CertFiles, and only it")
        self.kind = kind
        self.tls_errors = []
        self._context = None
        if tls is not None:
            self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._context.load_cert_chain(tls.cert, tls.key)
            if client_ca:
                self._context.load_verify_locations(client_ca)
                self._context.verify_mode = ssl.CERT_OPTIONAL
            self._context.sni_callback = self._note_sni
            self._sni = threading.local()
        self.routes = dict(routes or {})
        self.credentials = credentials
        self._records = []
        self._lock = threading.Lock()
        self._server = None
        self.port = None

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self.kind, self.port)

    def trust_client_ca(self, path):
        """Also accept client certificates signed by the CA in ``path`` (an https proxy asks for one)."""
        self._context.load_verify_locations(path)
        self._context.verify_mode = ssl.CERT_OPTIONAL

    def url_for(self, host):
        """The proxy's URL with another host name for 127.0.0.1 (e.g. ``localhost``, as its certificate names it)."""
        return "%s://%s:%d" % (self.kind, host, self.port)

    @property
    def records(self):
        with self._lock:
            return list(self._records)

    def clear(self):
        with self._lock:
            self._records.clear()

    def start(self):
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.settimeout(20)
                try:
                    sock = proxy._accept_tls(self.request)
                    upstream = proxy._handshake(sock)
                except (OSError, ValueError) as exc:
                    if proxy.kind == "https":
                        proxy.tls_errors.append(str(exc))
                    return
                if upstream is not None:
                    with upstream:
                        _relay(sock, upstream)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _record(self, record):
        with self._lock:
            self._records.append(record)

    def _dial(self, host, port):
        target = "%s:%d" % ("[%s]" % host if ":" in host else host, port)
        address = self.routes.get(target, (host, port))
        return socket.create_connection(address, timeout=10)

    def _note_sni(self, ssl_socket, server_name, context):
        self._sni.name = server_name

    def _accept_tls(self, sock):
        if self._context is None:
            return sock
        self._sni.name = None
        tls = self._context.wrap_socket(sock, server_side=True)
        tls.proxy_sni, tls.proxy_client_cert = self._sni.name, bool(tls.getpeercert())
        return tls

    def _handshake(self, sock):
        return self._socks5(sock) if self.kind == "socks5" else self._http(sock)

    # -- HTTP CONNECT

    def _http(self, sock):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                return None
            head += chunk
        lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        authorization = next((v for k, v in headers.items() if k.lower() == "proxy-authorization"), None)
        self._record(ProxyRecord(self.kind, target, proxy_authorization=authorization,
                                 sni=getattr(sock, "proxy_sni", None),
                                 client_cert=getattr(sock, "proxy_client_cert", False)))
        if method != "CONNECT":
            sock.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
            return None
        if self.credentials and authorization != "Basic " + base64.b64encode(
                ("%s:%s" % self.credentials).encode("utf-8")).decode("ascii"):
            sock.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
            return None
        host, _, port = target.rpartition(":")
        try:
            upstream = self._dial(host.strip("[]"), int(port))
        except OSError:
            sock.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return None
        sock.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        return upstream

    # -- SOCKS5

    def _socks5(self, sock):
        version, count = _exact(sock, 2)
        methods = _exact(sock, count)
        wanted = 2 if self.credentials else 0
        if version != 5 or wanted not in methods:
            sock.sendall(b"\x05\xff")
            return None
        sock.sendall(bytes([5, wanted]))
        user = None
        if wanted == 2:
            _, length = _exact(sock, 2)
            user = _exact(sock, length).decode("utf-8")
            password = _exact(sock, _exact(sock, 1)[0]).decode("utf-8")
            if (user, password) != tuple(self.credentials):
                sock.sendall(b"\x01\x01")
                return None
            sock.sendall(b"\x01\x00")
        _, command, _, kind = _exact(sock, 4)
        if kind == 1:
            host = socket.inet_ntop(socket.AF_INET, _exact(sock, 4))
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, _exact(sock, 16))
        else:
            host = _exact(sock, _exact(sock, 1)[0]).decode("idna")
        port = struct.unpack(">H", _exact(sock, 2))[0]
        self._record(ProxyRecord("socks5", "%s:%d" % ("[%s]" % host if ":" in host else host, port), user=user))
        try:
            upstream = self._dial(host, port)
        except OSError:
            sock.sendall(b"\x05\x05\x00\x01" + b"\x00" * 6)
            return None
        sock.sendall(b"\x05\x00\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", 0))
        return upstream


def _exact(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ValueError("closed")
        data += chunk
    return data


def _relay(a, b):
    """Copy bytes both ways until either side closes."""
    sockets = [a, b]
    while True:
        # Bytes a TLS socket has already decrypted do not make it readable for select: take them first.
        readable = [s for s in sockets if isinstance(s, ssl.SSLSocket) and s.pending()] or \
            select.select(sockets, [], [], 30)[0]
        if not readable:
            return
        for source in readable:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                return
            (b if source is a else a).sendall(data)
