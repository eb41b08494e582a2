"""Dialing the API server or a proxy: TCP within a deadline, the SAN check, CONNECT and SOCKS5 tunnels, the watchdog.

A leaf below the transport (as urllib3 keeps ``util/connection`` apart from ``util/proxy``): which
proxy applies is :mod:`kubectl_aicr.kube.proxy_rules`'s; this module only opens sockets.

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
"""

import base64
import contextlib
import re
import socket
import ssl
import struct
import threading
import time

from ..errors import TransportError

MAX_CONNECT_RESPONSE = 64 * 1024


def idna_ascii(host):
    """The ASCII form of a URL's host, as Go's net/http dials it, names it in TLS and in the Host header
    (``idnaASCII``: an ASCII host as it is, letter case kept; else its IDNA ASCII form); None when it has none.

    Python's ``idna`` codec (IDNA 2003) stands in for Go's x/net/idna (UTS 46): they agree on ordinary
    internationalized names (``bücher.example`` -> ``xn--bcher-kva.example``, ``host\\u3002`` -> ``host.``);
    a name the codec refuses (an empty label: ``\\u3002``, ``\\u200b``) is None, a host kubectl cannot reach
    either (Go looks up ``.`` or dials an empty host name)."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def _is_ip_literal(host):
    """True for an IPv4 or IPv6 address written as such (no zone): getaddrinfo asks no resolver for it."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except (OSError, ValueError):
            pass
    return False


def connect_tcp(host, port, timeout):
    """``socket.create_connection``, but all of it inside ``timeout`` seconds: the name lookup (run in a
    thread, since getaddrinfo cannot be interrupted) and every address tried, each with what is left."""
    end = time.monotonic() + timeout
    found = {}

    def lookup():
        name = idna_ascii(host)  # bytes for getaddrinfo: a str would go through the idna codec (and its errors)
        try:
            if name is None:
                raise socket.gaierror(socket.EAI_NONAME, "%s has no IDNA (ASCII) form" % host)
            found["addresses"] = socket.getaddrinfo(name.encode("ascii"), port, 0, socket.SOCK_STREAM)
        except OSError as exc:
            found["error"] = exc

    if _is_ip_literal(host):  # nothing to look up: getaddrinfo answers at once, no thread needed
        lookup()
    else:
        resolver = threading.Thread(target=lookup, name="name-lookup", daemon=True)
        resolver.start()
        resolver.join(timeout)
        if resolver.is_alive():
            raise socket.timeout("the name lookup of %s did not finish in time" % host)
    if "error" in found:
        raise found["error"]
    last = OSError("no address for %s" % host)
    for family, kind, protocol, _, address in found["addresses"]:
        left = end - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        sock = socket.socket(family, kind, protocol)
        sock.settimeout(left)
        try:
            sock.connect(address)
            return sock
        except OSError as exc:
            last = exc
            sock.close()
    raise last


def require_san(tls_socket, server_name):
    """Go's x509 never reads a certificate's CN: a verified certificate without SANs is refused."""
    certificate = tls_socket.getpeercert() or {}
    if not certificate.get("subjectAltName"):
        _refuse("x509: certificate relies on legacy Common Name field, use SANs instead (name %s)" % server_name)


def _refuse(message):
    error = ssl.SSLCertVerificationError(1, message)
    error.verify_message, error.reason = message, None
    raise error


_GO_HOST_LABEL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def _go_valid_hostname(name):
    """Go's crypto/x509 ``validHostname(name, false)``: one trailing dot allowed, no empty label, labels of
    ASCII letters, digits, ``_`` and ``-`` (not first)."""
    name = name[:-1] if name.endswith(".") else name
    return bool(name) and all(label and set(label) <= _GO_HOST_LABEL and label[0] != "-"
                              for label in name.split("."))


class TLSName:
    """One TLS server name, used as Go's crypto/tls and crypto/x509 use it: ``name`` is kubectl's
    ``tls-server-name`` as written (Go never converts it), else the server URL's host in its
    :func:`idna_ascii` form (net/http's ``canonicalAddr``), or an https proxy's host.

    - ``sni`` (bytes or None: none sent): Go's ``hostnameInSNI`` (none for an IP address; every trailing
      dot removed), when Python's ssl can send it: ASCII, no NUL, not starting with a dot, at most 255
      bytes. Go sends the others as they are (``\\0``, ``\\u3002``); the plugin sends no SNI for them.
    - ``checked`` (bytes or None): the name OpenSSL checks the certificate for in the handshake: an IP
      address (brackets removed; IP SANs only), or a name Go's ``validHostname`` accepts, its one trailing
      dot removed (Go's ``matchHostnames`` removes it too). Go matches any other name (``.``, ``..``,
      ``\\0``, ``\\u3002``, ``\\u200b``) only exactly with a DNS SAN (``matchExactly``: ASCII letter case
      aside; ``""`` and ``"."`` never match), and so does :meth:`verify` after the handshake, with Go's
      words (``x509: certificate is valid for localhost, not .``), as kubectl 1.37 refuses them.
    """

    def __init__(self, name):
        self.name = name
        host = name[1:-1] if name[:1] == "[" and name[-1:] == "]" else name
        host = host[:host.rfind("%")] if host.rfind("%") > 0 else host
        sni = None if _is_ip_literal(host) else name.rstrip(".")
        self.sni = sni.encode("ascii") if sni and sni.isascii() and "\0" not in sni and sni[0] != "." \
            and len(sni) <= 255 and not _is_ip_literal(sni) else None
        candidate = name[1:-1] if len(name) >= 3 and name[0] == "[" and name[-1] == "]" else name
        if _is_ip_literal(candidate):
            self.checked = candidate.encode("ascii")
        else:
            self.checked = self.sni if self.sni is not None and _go_valid_hostname(name) else None

    def wrap(self, context, sock, **options):
        """``context.wrap_socket(sock, **options)`` for this name (SNI, and OpenSSL's check when it applies)."""
        if not context.check_hostname:
            return context.wrap_socket(sock, server_hostname=self.sni, **options)
        if self.checked is not None:
            return context.wrap_socket(sock, server_hostname=self.checked, **options)
        context.check_hostname = False  # read when the socket is made; verify() checks the name instead
        try:
            return context.wrap_socket(sock, server_hostname=self.sni, **options)
        finally:
            context.check_hostname = True

    def verify(self, context, tls_socket):
        """After the handshake: SSLCertVerificationError (Go's words) unless the certificate is for this
        name; nothing to check under ``insecure-skip-tls-verify``."""
        if context.verify_mode == ssl.CERT_NONE:
            return
        require_san(tls_socket, self.name)
        if self.checked is not None:
            return  # OpenSSL checked it in the handshake
        names = [value for kind, value in tls_socket.getpeercert().get("subjectAltName", ()) if kind == "DNS"]
        wanted = self.name.translate(_ASCII_LOWER)
        if wanted in ("", ".") or wanted not in {n.translate(_ASCII_LOWER) for n in names}:
            _refuse(_go_hostname_error(names, self.name))


def _go_hostname_error(names, name):
    """crypto/x509 ``HostnameError.Error`` for a name that is not an IP address."""
    if len(names) >= 100:
        return "x509: certificate is valid for %d names, but none matched %s" % (len(names), name)
    if not names:
        return "x509: certificate is not valid for any names, but wanted to match " + name
    return "x509: certificate is valid for %s, not %s" % (", ".join(names), name)


@contextlib.contextmanager
def watchdog(seconds, on_expiry):
    """Run ``on_expiry()`` (in a daemon timer thread) if the block is still running after ``seconds``.

    The deadline's enforcer: a blocking read cannot be interrupted, so the watchdog shuts its socket."""
    timer = threading.Timer(seconds, on_expiry)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def shut(sock):
    """Shut ``sock`` down both ways (None, or an already closed socket: nothing to do)."""
    if sock is None:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def connect_via_proxy(proxy, host, port, timeout, context=None, tls_server_name=None):
    """A socket connected through ``proxy`` to ``host``:``port`` (not yet TLS); TransportError if the proxy
    refuses or, for an https proxy, its TLS fails. ``context`` is the cluster's ``ssl.SSLContext`` and
    ``tls_server_name`` its ``tls-server-name`` (None: unset): an https proxy is spoken to with them."""
    try:
        sock = connect_tcp(proxy.host, proxy.port, timeout)
    except OSError as exc:
        raise TransportError("cannot connect to proxy %s (%s): %s"
                             % (proxy.display(), proxy.origin, exc.strerror or exc)) from None
    # The tunnel's set-up shares the deadline: a proxy that trickles its answer is cut off by a watchdog
    # (which shuts the socket in use: wrapping it in TLS detaches the plain one).
    current = [sock]
    with watchdog(timeout, lambda: shut(current[0])):
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
    return sock


def _tls_to_proxy(sock, proxy, context, tls_server_name):
    """TLS to an https proxy with the cluster's context (Go's ``persistConn.addTLS`` with client-go's config)."""

    name = TLSName(tls_server_name or proxy.host)
    try:
        tls = name.wrap(context, sock)
        name.verify(context, tls)
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
    from .proxy_rules import parse_ip  # socks5 only: proxy_rules loads urllib.parse and ipaddress

    ip = parse_ip(host)
    if ip is not None:
        return (b"\x01" if ip.version == 4 else b"\x04") + ip.packed
    name = (idna_ascii(host) or "").encode("ascii")  # the server URL's host, already ASCII (rest.ServerURL)
    if not name or len(name) > 255:
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
