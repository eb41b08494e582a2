"""Which proxy a connection to the API server goes through, and the tunnel through it.

The rules are client-go's and Go's:

- A cluster's ``proxy-url`` (``tools/clientcmd/client_config.go`` ``parseProxyURL``:
  scheme http, https or socks5) is used for every request, whatever NO_PROXY says:
  client-go installs it with ``http.ProxyURL``, which ignores the environment.
- Otherwise ``HTTPS_PROXY`` (else ``https_proxy``) and ``NO_PROXY`` (else ``no_proxy``),
  by ``golang.org/x/net/http/httpproxy`` (``proxy.go``): uppercase first; a value
  without a usable scheme is read as ``http://`` + value; ``localhost`` and loopback
  addresses are never proxied; NO_PROXY entries are ``*``, CIDR blocks, IP addresses
  (optionally with a port), and domains (``foo.com`` matches it and its subdomains,
  ``.foo.com`` and ``*.foo.com`` only subdomains), compared in lower case.
- Tunnels (Go's ``net/http`` ``Transport.dialConn``): an http proxy gets
  ``CONNECT host:port`` (with ``Proxy-Authorization: Basic`` from the URL's user
  info) and must answer 200; a socks5 proxy (RFC 1928; RFC 1929 user/password from
  the URL) is asked for the host by name, as Go's dialer does.

- An https proxy (``proxy-url`` or ``HTTPS_PROXY`` ``https://...``) is spoken to over TLS,
  then asked to CONNECT, then the API server's TLS runs inside that tunnel. As Go's
  ``Transport.dialConn``/``addTLS`` does with client-go's TLS config, the proxy's TLS uses
  the cluster's settings: its certificate is verified against the kubeconfig's CA when one
  is set (else the system's), not at all under ``insecure-skip-tls-verify``, for the name
  ``tls-server-name`` when set (else the proxy's host), and the user's client certificate
  is shown if the proxy asks for one (checked against kubectl 1.37).

Unlike kubectl, an environment proxy value that cannot be read is an error, where Go
would silently connect directly.
"""

import base64
import ipaddress
import re
import socket
import threading
import struct
from typing import NamedTuple, Optional
from urllib.parse import unquote, urlsplit

from ..errors import ConfigError, TransportError

MAX_CONNECT_RESPONSE = 64 * 1024
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_DEFAULT_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}


class Proxy(NamedTuple):
    """A proxy to tunnel through: ``origin`` says where it came from (for messages)."""

    scheme: str
    host: str
    port: int
    username: Optional[str]
    password: Optional[str]
    origin: str

    def display(self):
        """``scheme://host:port`` (never the user info: it may hold a password)."""
        return "%s://%s:%d" % (self.scheme, "[%s]" % self.host if ":" in self.host else self.host, self.port)


def _split(text, origin):
    """Parse ``scheme://[user[:password]@]host[:port][/...]`` into a Proxy; ConfigError if it is not one."""
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        raise ConfigError("%s: could not parse %s" % (origin, _redacted(text))) from None
    if not parts.hostname:
        raise ConfigError("%s: %s has no host" % (origin, _redacted(text)))
    scheme = parts.scheme.lower()
    return Proxy(scheme, parts.hostname, port or _DEFAULT_PORTS.get(scheme, 80),
                 unquote(parts.username) if parts.username is not None else None,
                 unquote(parts.password) if parts.password is not None else None, origin)


def _redacted(text):
    """The URL with any password in its user info replaced by ``xxxxx`` (as Go's url.Redacted does)."""
    # Up to the LAST "@": a password may itself hold "/" or "@", and none of it is ever shown.
    return re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://).*@", r"\1xxxxx@", text, flags=re.S)


def parse_proxy_url(text, cluster_name):
    """A cluster's ``proxy-url`` -> Proxy (client-go ``parseProxyURL``); ConfigError naming the cluster."""
    origin = "proxy-url of cluster %r" % cluster_name
    match = _SCHEME.match(text)
    if not match:
        raise ConfigError("invalid 'proxy-url' %s for cluster %r: could not parse: %s; write it as "
                          "http://host:port" % (_redacted(text), cluster_name, _redacted(text)))
    if match.group(1).lower() not in ("http", "https", "socks5"):
        raise ConfigError("invalid 'proxy-url' %s for cluster %r: unsupported scheme %r, must be http, https, "
                          "or socks5" % (_redacted(text), cluster_name, match.group(1)))
    return _split(text, origin)


def _environment_proxy(name, value):
    """An HTTPS_PROXY value -> Proxy, read as Go's httpproxy ``parseProxy`` reads it."""
    match = _SCHEME.match(value)
    if not match or match.group(1).lower() not in ("http", "https", "socks5", "socks5h"):
        value = "http://" + value
    proxy = _split(value, name)
    if not _SCHEME.match(value) or proxy.scheme not in _DEFAULT_PORTS:
        raise ConfigError("%s=%s is not a proxy URL kubectl-aicr can use" % (name, _redacted(value)))
    return proxy


def _getenv_any(environ, *names):
    """(name, value) of the first of ``names`` set to a non-empty value in ``environ``, or (names[0], "")."""
    for name in names:
        if environ.get(name):
            return name, environ[name]
    return names[0], ""


def from_environment(host, port, environ):
    """The proxy for an https request to ``host``:``port`` under HTTPS_PROXY/NO_PROXY, or None."""
    name, value = _getenv_any(environ, "HTTPS_PROXY", "https_proxy")
    if not value:
        return None
    proxy = _environment_proxy(name, value)
    _, no_proxy = _getenv_any(environ, "NO_PROXY", "no_proxy")
    return proxy if use_proxy(host, port, no_proxy) else None


def choose(cluster, host, port, environ):
    """The Proxy for the cluster's server (its proxy-url, else the environment's), or None for a direct connection."""
    if cluster.proxy_url:
        return parse_proxy_url(cluster.proxy_url, cluster.name)
    return from_environment(host, port, environ)


def _ip(text):
    """An IP address (IPv4-mapped IPv6 addresses as IPv4, as Go's net.IP compares them), or None."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def use_proxy(host, port, no_proxy):
    """False when a request to ``host``:``port`` must not use the proxy (httpproxy ``config.useProxy``)."""
    host = host.lower().strip()
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    port = str(port)
    for entry in no_proxy.split(","):
        entry = entry.lower().strip()
        if entry and _no_proxy_match(entry, host, port, ip):
            return False
    return True


def _no_proxy_match(entry, host, port, ip):
    if entry == "*":
        return True
    if "/" in entry:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            network = None
        if network is not None:
            return ip is not None and ip.version == network.version and ip in network
    entry_host, entry_port = _split_host_port(entry)
    if not entry_host:
        return False
    entry_ip = _ip(entry_host)
    if entry_ip is not None:
        return ip is not None and entry_ip == ip and entry_port in ("", port)
    if entry_host.startswith("*."):
        entry_host = entry_host[1:]
    exact = not entry_host.startswith(".")
    suffix = entry_host if not exact else "." + entry_host
    if host.endswith(suffix) or (exact and host == suffix[1:]):
        return entry_port in ("", port)
    return False


def _split_host_port(entry):
    """Go's net.SplitHostPort where it succeeds (``host:port``, ``[v6]:port``), else (entry, "")."""
    match = re.match(r"^\[([^\]]*)\]:([^:]*)$", entry) or re.match(r"^([^:\[\]]*):([^:]*)$", entry)
    if match:
        return match.group(1), match.group(2)
    return entry, ""


# ---------------------------------------------------------------------------------------------
# Tunnels


def connect(proxy, host, port, timeout, context=None, tls_server_name=None):
    """A socket connected through ``proxy`` to ``host``:``port`` (not yet TLS); TransportError if the proxy
    refuses or, for an https proxy, its TLS fails. ``context`` is the cluster's ``ssl.SSLContext`` and
    ``tls_server_name`` its ``tls-server-name`` (None: unset): an https proxy is spoken to with them."""
    from .rest import connect_tcp
    try:
        sock = connect_tcp(proxy.host, proxy.port, timeout)
    except OSError as exc:
        raise TransportError("cannot connect to proxy %s (%s): %s"
                             % (proxy.display(), proxy.origin, exc.strerror or exc)) from None
    # The tunnel's set-up shares the deadline: a proxy that trickles its answer is cut off by a watchdog
    # (which shuts the socket in use: wrapping it in TLS detaches the plain one).
    current = [sock]
    watchdog = threading.Timer(timeout, lambda: _shut(current[0]))
    watchdog.daemon = True
    watchdog.start()
    try:
        if proxy.scheme == "socks5":
            _socks5_connect(sock, proxy, host, port)
        elif proxy.scheme == "https":
            sock = current[0] = _tls_to_proxy(sock, proxy, context, tls_server_name)
            _http_connect(sock, proxy, host, port)
            sock = _tunnel_inside(sock)
        else:
            _http_connect(sock, proxy, host, port)
    except BaseException:
        sock.close()
        raise
    finally:
        watchdog.cancel()
    return sock


def _tls_to_proxy(sock, proxy, context, tls_server_name):
    """TLS to an https proxy with the cluster's context (Go's ``persistConn.addTLS`` with client-go's config)."""
    import ssl
    from .rest import _require_san

    name = tls_server_name or proxy.host
    try:
        tls = context.wrap_socket(sock, server_hostname=name)
        if context.verify_mode != ssl.CERT_NONE:
            _require_san(tls, name)
        return tls
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise TransportError("TLS: the certificate of proxy %s (%s) is not trusted: %s (it is verified as the "
                             "cluster's server is: against the kubeconfig's CA when one is set, else the system's)"
                             % (proxy.display(), proxy.origin, exc.verify_message or exc.reason or exc.args[-1])
                             ) from None
    except ssl.SSLError as exc:
        sock.close()
        raise TransportError("TLS handshake with proxy %s (%s) failed: %s"
                             % (proxy.display(), proxy.origin, exc.reason or exc)) from None


def _tunnel_inside(outer):
    """A plain socket whose bytes travel inside the TLS connection ``outer`` (a thread relays them), so the
    API server's own TLS can run over it: Python's ssl cannot wrap one TLS socket in another."""
    inner, near = socket.socketpair()
    threading.Thread(target=_pump, args=(outer, near), name="https-proxy-tunnel", daemon=True).start()
    return inner


def _pump(outer, near):
    """Copy bytes both ways between ``outer`` (TLS to the proxy) and ``near`` until either side ends.

    A readable TLS socket may hold a record without application data (a TLS 1.3 session ticket): its
    read gives up after a moment instead of blocking the other direction."""
    import select

    try:
        with outer, near:
            while True:
                ready = [outer] if outer.pending() else select.select([outer, near], [], [])[0]
                for source in ready:
                    if source is outer:
                        outer.settimeout(0.2)
                        try:
                            data = outer.recv(65536)
                        except socket.timeout:
                            continue
                        target = near
                    else:
                        data = near.recv(65536)
                        outer.settimeout(30.0)
                        target = outer
                    if not data:
                        return
                    target.sendall(data)
    except (OSError, ValueError):
        return


def _shut(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _target(host, port):
    return "%s:%d" % ("[%s]" % host if ":" in host else host, port)


def _http_connect(sock, proxy, host, port):
    target = _target(host, port)
    lines = ["CONNECT %s HTTP/1.1" % target, "Host: %s" % target]
    if proxy.username is not None:
        pair = ("%s:%s" % (proxy.username, proxy.password or "")).encode("utf-8")
        lines.append("Proxy-Authorization: Basic " + base64.b64encode(pair).decode("ascii"))
    _send(sock, proxy, ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = _recv(sock, proxy, 4096)
        if not chunk:
            raise TransportError("proxy %s (%s) closed the connection instead of answering CONNECT"
                                 % (proxy.display(), proxy.origin))
        head += chunk
        if len(head) > MAX_CONNECT_RESPONSE:
            raise TransportError("proxy %s (%s) sent an oversized answer to CONNECT" % (proxy.display(), proxy.origin))
    status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    match = re.match(r"^HTTP/1\.[01] (\d{3})(?: (.*))?$", status_line)
    if not match:
        raise TransportError("proxy %s (%s) sent a malformed answer to CONNECT" % (proxy.display(), proxy.origin))
    if match.group(1) != "200":
        raise TransportError("proxy %s (%s) refused to tunnel to %s: HTTP %s %s"
                             % (proxy.display(), proxy.origin, target, match.group(1), (match.group(2) or "")[:80]))
    if not head.endswith(b"\r\n\r\n"):
        raise TransportError("proxy %s (%s) sent data after its answer to CONNECT" % (proxy.display(), proxy.origin))


_SOCKS_REPLIES = {1: "general failure", 2: "connection not allowed by ruleset", 3: "network unreachable",
                  4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
                  8: "address type not supported"}


def _socks5_connect(sock, proxy, host, port):
    methods = b"\x00\x02" if proxy.username is not None else b"\x00"
    _send(sock, proxy, b"\x05" + bytes([len(methods)]) + methods)
    version, method = _recv_exact(sock, proxy, 2)
    if version != 5 or method not in methods:
        raise TransportError("socks5 proxy %s (%s) accepts none of our authentication methods"
                             % (proxy.display(), proxy.origin))
    if method == 2:
        _socks5_login(sock, proxy)
    _send(sock, proxy, b"\x05\x01\x00" + _socks5_address(host) + struct.pack(">H", port))
    version, reply, _, kind = _recv_exact(sock, proxy, 4)
    if version != 5 or reply != 0:
        raise TransportError("socks5 proxy %s (%s) could not connect to %s: %s"
                             % (proxy.display(), proxy.origin, _target(host, port),
                                _SOCKS_REPLIES.get(reply, "reply %d" % reply)))
    length = {1: 4, 4: 16}.get(kind)
    if length is None:
        length = _recv_exact(sock, proxy, 1)[0]
    _recv_exact(sock, proxy, length + 2)


def _socks5_login(sock, proxy):
    user = (proxy.username or "").encode("utf-8")[:255]
    password = (proxy.password or "").encode("utf-8")[:255]
    _send(sock, proxy, b"\x01" + bytes([len(user)]) + user + bytes([len(password)]) + password)
    if _recv_exact(sock, proxy, 2)[1] != 0:
        raise TransportError("socks5 proxy %s (%s) refused the user name and password of its URL"
                             % (proxy.display(), proxy.origin))


def _socks5_address(host):
    ip = _ip(host)
    if ip is not None:
        return (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    name = host.encode("idna")
    if len(name) > 255:
        raise TransportError("host name %s is too long for a socks5 proxy" % host)
    return b"\x03" + bytes([len(name)]) + name


def _send(sock, proxy, data):
    try:
        sock.sendall(data)
    except OSError as exc:
        raise TransportError("proxy %s (%s): %s" % (proxy.display(), proxy.origin, exc.strerror or exc)) from None


def _recv(sock, proxy, size):
    try:
        return sock.recv(size)
    except socket.timeout:
        raise
    except OSError as exc:
        raise TransportError("proxy %s (%s): %s" % (proxy.display(), proxy.origin, exc.strerror or exc)) from None


def _recv_exact(sock, proxy, size):
    data = b""
    while len(data) < size:
        chunk = _recv(sock, proxy, size - len(data))
        if not chunk:
            raise TransportError("socks5 proxy %s (%s) closed the connection during its handshake"
                                 % (proxy.display(), proxy.origin))
        data += chunk
    return data
