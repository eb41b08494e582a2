"""HTTPS to the Kubernetes API server: one connection, one deadline, Status errors.

- The server URL is an ``https://`` URL; its host is used as written (upper-case letters kept) for the TLS
  server name, the ``Host`` header (``host[:port]`` exactly as in the URL) and a proxy's CONNECT, as Go's
  net/http sends them (an internationalized host in its IDNA ASCII form, a port's leading zeros read); a
  path prefix (``https://host/k8s/clusters/c-x``, Rancher) is kept in front of every request path, as
  client-go's ``path.Join`` keeps it; an IPv6 address is in brackets. kubectl would talk plain HTTP, without
  credentials, to an ``http://`` or scheme-less server: the plugin refuses those.
- TLS 1.2 or newer (client-go's MinVersion); the server certificate is verified
  against the cluster's CA (only it, when one is given) or the system's CAs, unless
  the kubeconfig sets ``insecure-skip-tls-verify`` (refused together with a CA, as
  ``transport/transport.go`` ``TLSConfigFor`` refuses it); ``tls-server-name`` is used
  for SNI and for verification as Go uses it (:class:`kubectl_aicr.kube.net.TLSName`); IP addresses are
  checked against IP SANs; a certificate whose name is only in its CN is rejected, as Go's crypto/x509
  rejects it.
- Proxies: see :mod:`kubectl_aicr.kube.proxy_rules` (proxy-url, else HTTPS_PROXY/NO_PROXY) and
  :mod:`kubectl_aicr.kube.net` (the tunnels).
- One connection (HTTP/1.1, :mod:`kubectl_aicr.kube.http1`) is reused for all of a command's requests.
- Every request of a command shares one :class:`Deadline` (30 s, the plugin page),
  exec credential plugins included; a watchdog closes the socket when it passes, so a
  server that trickles bytes or never answers cannot hold the command longer.
- Credentials come from an :class:`~kubectl_aicr.kube.auth.Authenticator`: an exec
  plugin's credential is renewed at its expiry, and once after a 401 answer, the
  request is sent again with the new one (kubectl renews after a 401 too, but leaves
  the failed request failed).
- Responses are read up to ``MAX_RESPONSE_BYTES`` (a longer one is :class:`ResponseTooLarge`, which a
  list pages around); redirects are never followed.
- An error answer becomes :class:`~kubectl_aicr.errors.ApiError` whose text is
  the Kubernetes ``Status`` message, as kubectl prints it (k8s.io/apimachinery
  ``pkg/api/errors``); a failure to connect becomes one
  :class:`~kubectl_aicr.errors.TransportError` line naming the server.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import base64
import binascii
import contextlib
import datetime
import json
import os
import posixpath
import re
import socket
import ssl
import time

from .. import __version__, helpers
from . import auth, http1, net, redact, warning_headers
from ..errors import ApiError, AuthError, ConfigError, TransportError
from ..records import Record

DEADLINE_SECONDS = 30.0
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # an object is at most ~1.5 MiB in etcd; lists of plans stay well under
USER_AGENT = "kubectl-aicr/%s" % __version__


class ResponseTooLarge(TransportError):
    """An answer over :data:`MAX_RESPONSE_BYTES` (refused unread, the connection closed): a caller that can
    ask for less (a list's ``limit``) may ask again."""


class Impersonation(Record):
    """Who the requests act as (client-go ``rest.ImpersonationConfig``), sent as ``Impersonate-*`` headers."""

    user: Optional[str] = None
    uid: Optional[str] = None
    groups: Tuple[str, ...] = ()
    extra: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()   # ((key, (values...)), ...)


class RESTConfig(Record):
    """How to reach one API server (client-go ``rest.Config``): the one seam between what the kubeconfig
    says and how to connect. :func:`kubectl_aicr.kube.clientcmd.rest_config` builds it from the selected
    entries and the command line; below it nothing reads kubeconfig field names.

    ``host``: the server URL; ``cluster_name``: for messages; TLS (client-go ``TLSClientConfig``):
    ``insecure``, ``ca_file`` (a path) or ``ca_data`` (PEM bytes), ``server_name`` (SNI and verification;
    None: the URL's host); ``proxy_url`` (None: the environment's); ``impersonate``.
    """

    _secret = ("proxy_url",)  # may carry a user and password (http://u:p@proxy:3128)

    host: str
    cluster_name: str
    insecure: bool = False
    ca_file: Optional[str] = None
    ca_data: Optional[bytes] = None
    server_name: Optional[str] = None
    proxy_url: Optional[str] = None
    impersonate: Impersonation = Impersonation()


class Deadline:
    """A point in time (``time.monotonic`` seconds) that every request of a command must finish before."""

    def __init__(self, seconds=DEADLINE_SECONDS):
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def remaining(self):
        """Seconds left (float > 0); TransportError once the deadline has passed."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise TransportError("the %d-second deadline for this command's API calls has passed" % self.seconds)
        return left

    @contextlib.contextmanager
    def capped(self, seconds):
        """Within the block the deadline is at most ``seconds`` from now (its messages then name them), for every
        holder of it (the client, the credential plugins); after it, as it was."""
        at, whole = self.at, self.seconds
        if time.monotonic() + seconds < at:
            self.at, self.seconds = time.monotonic() + seconds, seconds
        try:
            yield self
        finally:
            self.at, self.seconds = at, whole


class ServerURL:
    """A parsed cluster ``server``: ``host`` (no brackets), ``port``, ``prefix`` (path, no trailing /), ``text``."""

    def __init__(self, text):
        self.text = text
        self.shown = shown = redact.url(text)  # what every message shows: never a password
        try:
            parts = split_url(text)
        except ValueError as exc:
            raise ConfigError("server %r is not a valid URL (%s)" % (shown, _why(exc))) from None
        if "@" in parts.netloc:
            raise ConfigError("server %r must not carry a user name or password in its URL" % shown)
        netloc_host = parts.netloc
        if netloc_host.count(":") > 1 and not netloc_host.startswith("["):
            raise ConfigError('host must be a URL or a host:port pair: "%s" (an IPv6 address must be in brackets, '
                              "e.g. https://[::1]:6443)" % shown)
        self._check_scheme(text, shown, parts.scheme)
        try:
            port = parts.port if isinstance(parts, _Split) else _url_port(parts.netloc)
        except ValueError as exc:
            raise ConfigError("server %r is not a valid URL (%s)" % (shown, _why(exc))) from None
        host = parts.hostname or ""
        if not host:
            raise ConfigError("server %r has no host" % shown)
        if parts.query or parts.fragment:
            raise ConfigError("server %r must not have a query or fragment" % shown)
        self.host = net.idna_ascii(_as_written(parts.netloc, host))  # as Go's net/http dials and names it
        if self.host is None:
            raise ConfigError("server %r: its host has no IDNA (ASCII) form, so it cannot be looked up" % shown)
        self.port = 443 if port is None else port
        # The Host header Go sends: the URL's host[:port] as written (net/http Request.write), zone removed.
        self.host_header = re.sub(r"%25[^\]]*\]", "]", parts.netloc).rstrip(":")
        if not self.host_header.isascii():  # an internationalized name: its ASCII form (httpguts.PunycodeHostPort)
            port_text = self.host_header.rpartition(":")[2] if ":" in self.host_header else None
            self.host_header = self.host + (":" + port_text if port_text is not None else "")
        prefix = posixpath.normpath(parts.path) if parts.path else ""
        self.prefix = "" if prefix in ("/", ".", "//") else prefix.rstrip("/")

    @staticmethod
    def _check_scheme(text, shown, scheme):
        """ConfigError unless ``scheme`` (of the URL ``text``, ``shown`` in messages) is https."""
        if scheme == "https":
            return
        if scheme == "http":
            raise ConfigError("server %r is not an https:// URL: kubectl would send its requests unencrypted and "
                              "without credentials; kubectl-aicr only talks HTTPS" % shown)
        if not scheme or "://" not in text:
            raise ConfigError("server %r has no https:// scheme: kubectl would talk plain HTTP to it, without "
                              "credentials; write it as https://%s" % (shown, shown))
        raise ConfigError("server %r is not an https:// URL" % shown)

    def __str__(self):
        return self.shown


def _why(exc):
    """What urlsplit found wrong in a server URL, in words of our own: its message quotes a piece of the
    URL (a port, a netloc), which may be a piece of a password."""
    text = str(exc)
    return "invalid port" if "Port" in text else "invalid IPv6 address" if "IPv6" in text else "malformed"


_PLAIN_HOST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-")
_PLAIN_PATH = _PLAIN_HOST | frozenset("/_~")


class _Split:
    """The parts of a URL as ``urllib.parse.urlsplit`` gives them (``scheme``, ``netloc``, ``path``,
    ``query``, ``fragment``, ``hostname``, ``port``), for the URLs :func:`split_url` reads itself."""

    query = fragment = ""

    def __init__(self, scheme, netloc, path, host, port):
        self.scheme, self.netloc, self.path, self.hostname, self.port = scheme, netloc, path, host.lower(), port


def split_url(text):
    """``urllib.parse.urlsplit(text)``. A server URL as kubeconfigs hold it, ``https://`` then a host of letters,
    digits, dots and hyphens, an optional port of 1 to 5 digits up to 65535 and an optional path of
    those characters and ``/_~``, is split here (urllib.parse with ipaddress costs every start ~2.3 ms,
    issue 15); any other text goes to urlsplit, its messages included. tests/test_units.py checks the two
    agree on generated URLs."""
    rest = text[8:] if text.startswith("https://") else None
    if rest:
        netloc, slash, path = rest.partition("/")
        host, colon, port = netloc.partition(":")
        if host and set(host) <= _PLAIN_HOST and set(path) <= _PLAIN_PATH and (
                not colon or (port.isdigit() and port.isascii() and len(port) <= 5 and int(port) <= 65535)):
            return _Split("https", netloc, slash + path, host, int(port) if port else None)
    from urllib.parse import urlsplit
    return urlsplit(text)


def _urlencode(query):
    """``urllib.parse.urlencode(query)`` (a dict), loaded only for a request with a query (list's paging)."""
    from urllib.parse import urlencode
    return urlencode(query)


def _url_port(netloc):
    """:func:`proxy_rules.url_port` (Go's reading; urlsplit's ``port`` raises for a 5,000-digit port), for a
    URL :func:`split_url` left to urlsplit, which has loaded urllib.parse already."""
    from .proxy_rules import url_port
    return url_port(netloc)


def _as_written(netloc, host):
    """The host of ``netloc`` with its letters as written (urlsplit lower-cases ``hostname``): Go's url.Parse
    keeps them, so kubectl sends the TLS server name, the Host header and a proxy's CONNECT target as written."""
    hostport = netloc.rpartition("@")[2]
    written = hostport[1:hostport.find("]")] if hostport.startswith("[") else hostport.rpartition(":")[0] \
        if ":" in hostport else hostport
    return written if written.lower() == host else host


def tls_context(config, credentials, secrets=None):
    """Build the ``ssl.SSLContext`` for a :class:`RESTConfig` and the credentials' client certificate.

    Raises ConfigError for unreadable CA data, AuthError for a client certificate or key that cannot be
    loaded (an encrypted key fails at once, no prompt). A CA together with ``insecure`` was refused before
    (:func:`kubectl_aicr.kube.validation.cluster_problems`, as client-go ``TLSConfigFor`` refuses it).
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.hostname_checks_common_name = False
    except (AttributeError, ValueError):  # pragma: no cover - OpenSSL builds without the flag
        pass
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif config.ca_file or config.ca_data:
        _load_ca(context, config)
    else:
        context.load_default_certs()
    if credentials.certificate() is not None:
        owned = secrets is None
        secrets = secrets or auth.SecretFiles()
        try:
            with auth.client_certificate_files(credentials, secrets) as (cert_file, key_file):
                _load_client_certificate(context, cert_file, key_file)
        finally:
            if owned:
                secrets.close()
    return context


# OpenSSL's X509_V_FLAG_PARTIAL_CHAIN (ssl.VERIFY_X509_PARTIAL_CHAIN from Python 3.10): a certificate of the
# trust store ends a chain wherever it sits in it, as every certificate of Go's x509.CertPool does.
VERIFY_X509_PARTIAL_CHAIN = getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0x80000)
MAX_CA_BYTES = 16 * 1024 * 1024
_PEM_BLOCK = rb"-----BEGIN ([^\r\n]*?)-----[ \t]*\r?\n(.*?)\n-----END \1-----"  # compiled on first use


def pem_blocks(data):
    """Yield ``(type, headers_present, der_or_None)`` for each PEM block of ``data`` (bytes), as Go's
    ``encoding/pem`` ``Decode`` finds them; ``der`` is None when the body is not valid base64."""
    for match in re.finditer(_PEM_BLOCK, data, re.S):
        body = match.group(2)
        first = body.split(b"\n", 1)[0]
        headers = b":" in first
        try:
            der = base64.b64decode(re.sub(rb"\s+", b"", body), validate=True)
        except (binascii.Error, ValueError):
            der = None
        yield match.group(1).decode("latin-1"), headers, der


def _load_ca(context, config):
    """Trust every certificate of the cluster's CA data or file, as Go's ``x509.CertPool.AppendCertsFromPEM``
    does (client-go ``transport/transport.go`` ``rootCertPool``): each CERTIFICATE block without headers that
    parses is a trust anchor wherever it sits in a chain (the server's own certificate pins it); other blocks
    are skipped; ConfigError only when no block gives a certificate."""
    which = "certificate-authority-data" if config.ca_data else "certificate-authority %s" % config.ca_file
    data = config.ca_data or _read_ca_file(config)
    added, bad_certificate, blocks = 0, False, 0
    for kind, headers, der in pem_blocks(data):
        blocks += 1
        if kind != "CERTIFICATE" or headers:
            continue
        try:
            if der is None:
                raise ValueError("not base64")
            context.load_verify_locations(cadata=der)
        except (ssl.SSLError, ValueError):
            bad_certificate = True
            continue
        added += 1
    if not added:
        problem = ("holds a CERTIFICATE block that is not a valid certificate" if bad_certificate else
                   "holds no usable PEM CERTIFICATE block (other blocks, and blocks with headers, are skipped)"
                   if blocks else "holds no PEM block")
        raise ConfigError("unable to load root certificates: the %s of cluster %s %s" % (which, config.cluster_name, problem))
    context.verify_flags |= VERIFY_X509_PARTIAL_CHAIN


def _read_ca_file(config):
    path, name = config.ca_file, config.cluster_name
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_CA_BYTES)
    except FileNotFoundError:
        raise ConfigError("unable to read certificate-authority %s for %s due to open %s: no such file or directory"
                          % (path, name, path)) from None
    except OSError as exc:
        raise ConfigError("unable to read certificate-authority %s for %s due to open %s: %s"
                          % (path, name, path, exc.strerror or exc)) from None
    except ValueError:  # a NUL in the path: Go's open fails with EINVAL
        raise ConfigError("unable to read certificate-authority %s for %s due to open %s: invalid argument"
                          % (path, name, path)) from None


class _EncryptedKey(Exception):
    pass


def _no_password():
    raise _EncryptedKey()


def _load_client_certificate(context, cert_file, key_file):
    try:
        context.load_cert_chain(cert_file, key_file, password=_no_password)
    except _EncryptedKey:
        raise AuthError("the client key is encrypted; kubectl-aicr never asks for a passphrase: decrypt it "
                        "(openssl pkey -in KEY -out KEY.plain) or use an unencrypted key") from None
    except ssl.SSLError as exc:
        if "_EncryptedKey" in repr(exc.__context__):  # pragma: no cover - depends on the ssl module
            raise AuthError("the client key is encrypted; kubectl-aicr never asks for a passphrase") from None
        reason = exc.reason or ""
        if "MISMATCH" in reason.upper():
            raise AuthError("the client certificate and key do not match (tls: private key does not match "
                            "public key)") from None
        raise AuthError("failed parsing client key/certificate (%s)" % (reason or "no PEM certificate and key"
                                                                        )) from None
    except OSError as exc:
        raise AuthError("cannot read the client certificate or key: %s" % (exc.strerror or exc)) from None


class _Connection:
    """One TLS connection to the API server, possibly through a proxy's tunnel, whose TLS server name (SNI,
    verification) may differ from the host; requests and responses are :mod:`kubectl_aicr.kube.http1`'s."""

    def __init__(self, host, port, context, server_name, via=None, tls_server_name=None):
        self.host, self.port, self._context = host, port, context
        self._server_name = server_name
        self._via = via
        self._tls_server_name = tls_server_name
        self.sock = None
        self._reader = None

    def connect(self, timeout):
        if self._via is not None:
            sock = net.connect_via_proxy(self._via, self.host, self.port, timeout, self._context,
                                         self._tls_server_name)
        else:
            sock = net.connect_tcp(self.host, self.port, timeout)
        try:
            if sock.family in (socket.AF_INET, socket.AF_INET6):  # not the pipe inside an https proxy's TLS
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(timeout)  # a tunnel's pipe has none; a proxy's socket kept its connect's
            # The TLS socket is in self.sock before its handshake starts, so the watchdog can shut it then.
            name = net.TLSName(self._server_name)
            self.sock = name.wrap(self._context, sock, do_handshake_on_connect=False)
            self.sock.do_handshake()
            name.verify(self._context, self.sock)
        except BaseException:
            (self.sock or sock).close()
            self.sock = None
            raise
        self._reader = self.sock.makefile("rb")

    def exchange(self, method, target, headers, payload, timeout, sending=None):
        """Send one request and read its answer (an :class:`http1.Response`), connecting first if needed.
        ``sending``: called (no arguments) right before the request's first byte is handed to the socket."""
        if self.sock is None:
            self.connect(timeout)
        self.sock.settimeout(timeout)
        data = http1.request_bytes(method, target, headers, payload)
        if sending is not None:
            sending()
        self.sock.sendall(data)
        response = http1.read_response(self._reader, MAX_RESPONSE_BYTES, method)
        if not response.keep_alive:
            self.close()
        return response

    def closed_while_idle(self):
        """True (and the connection closed) when the idle kept-alive connection has something to read before
        a request was sent: the server closed it (an EOF) or wrote unasked (a 408); the next request dials."""
        import select
        try:
            readable = bool(self.sock.pending() or select.select([self.sock], [], [], 0)[0]) or self._buffered()
        except (OSError, ValueError):
            readable = True
        if readable:
            self.close()
        return readable

    def _buffered(self):
        """True when the reader's buffer holds bytes the last answer did not use (an unasked 408 glued to
        it): with the socket non-blocking, peek returns buffered bytes without reading, else raises."""
        self.sock.settimeout(0.0)
        try:
            return bool(self._reader.peek(1))
        except (ssl.SSLWantReadError, BlockingIOError):
            return False

    def close(self):
        reader, sock, self._reader, self.sock = self._reader, self.sock, None, None
        for item in (reader, sock):
            if item is not None:
                try:
                    item.close()
                except OSError:
                    pass


def _target(url):
    """The request target as sent: every byte outside printable ASCII percent-encoded (UTF-8), as Go's
    ``url.URL.EscapedPath`` sends a path holding spaces or non-ASCII letters (a server URL's path prefix)."""
    if url.isascii() and url.isprintable() and " " not in url:
        return url
    return "".join(c if "!" <= c <= "~" else "".join("%%%02X" % b for b in c.encode("utf-8", "replace"))
                   for c in url)


def _choose_proxy(config, server, environ):
    """The proxy for ``server`` (see :mod:`kubectl_aicr.kube.proxy_rules`, imported only when a proxy may apply), or None."""
    if not (config.proxy_url or environ.get("HTTPS_PROXY") or environ.get("https_proxy")):
        return None
    from . import proxy_rules

    return proxy_rules.choose(config.proxy_url, config.cluster_name, server.host, server.port, environ)


def impersonation_headers(impersonate):
    """The ``Impersonate-*`` headers (client-go ``transport/round_trippers.go`` ``NewImpersonatingRoundTripper``)."""
    if not impersonate.user:
        return ()
    headers = [("Impersonate-User", impersonate.user)]
    if impersonate.uid:
        headers.append(("Impersonate-Uid", impersonate.uid))
    for group in impersonate.groups:
        headers.append(("Impersonate-Group", group))
    for key, values in impersonate.extra:
        for value in values:
            headers.append(("Impersonate-Extra-" + auth.header_key_escape(key), value))
    return tuple(headers)


class Client:
    """Requests to one API server over one reused connection, inside one :class:`Deadline`.

    ``config`` is a :class:`RESTConfig`; ``credentials`` an :class:`auth.Authenticator`;
    ``secrets`` an :class:`auth.SecretFiles` for client certificate data; ``environ``
    the environment for proxy settings (default ``os.environ``).

    ``request`` returns the decoded JSON object (dict) of a 2xx answer and raises
    ApiError (an error answer), TransportError (could not connect, TLS failed,
    deadline passed, response too large, not JSON, a redirect), AuthError
    (credentials could not be obtained).

    ``sent`` counts the requests whose first byte may have left this machine (counted just before it is
    handed to the socket): a request that failed or was interrupted with ``sent`` unchanged was never sent
    (commands/writes.py tells "nothing was written" from "the write may have been recorded" by it).
    """

    def __init__(self, config, credentials, deadline=None, secrets=None, environ=None):
        self.server = ServerURL(config.host)
        self.config = config
        self.authenticator = credentials
        self.deadline = deadline or Deadline()
        self.secrets = secrets
        self.proxy = _choose_proxy(config, self.server, os.environ if environ is None else environ)
        self._impersonation = impersonation_headers(config.impersonate)
        self.context = None
        self._context_for = object()
        self.requests = 0
        self.sent = 0
        self._connection = None
        self._server_date = None

    def server_time(self):
        """The API server's clock now (aware UTC datetime), from the ``Date`` header of its last
        answer plus the time since (RFC 9110 section 6.6.1); None before any dated answer."""
        if self._server_date is None:
            return None
        date, received = self._server_date
        try:
            return date + datetime.timedelta(seconds=time.monotonic() - received)
        except OverflowError:  # a Date at the very end of year 9999
            raise TransportError("the API server %s says it is %s (its Date header), the end of the calendar; "
                                 "check its clock" % (self.server, helpers.format_utc(date))) from None

    def _note_server_time(self, header):
        date = helpers.parse_http_date(header)  # None: absent or unreadable (RFC 9110's three forms only)
        if date is not None:
            self._server_date = (date, time.monotonic())

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def get(self, path, query=None):
        """GET ``path`` (below the server's path prefix) with optional query dict; the JSON object."""
        return self.request("GET", path, query=query)

    def request(self, method, path, query=None, body=None, content_type=None):
        """Send one request; ``body`` is a JSON-serialisable value, sent with ``content_type``."""
        url = self.server.prefix + path + ("?" + _urlencode(query) if query else "")
        payload = None if body is None else json.dumps(body).encode("utf-8")
        credentials = self.authenticator.current()
        answer = self._send(method, url, payload, content_type, credentials)
        if answer[0] == 401:
            renewed = self.authenticator.renew(credentials)
            if renewed is not None:
                answer = self._send(method, url, payload, content_type, renewed)
        return self._decode(method, path, *answer)

    def _send(self, method, url, payload, content_type, credentials):
        headers = [("Host", self.server.host_header), ("Accept", "application/json"), ("User-Agent", USER_AGENT)]
        if payload is not None:
            headers.append(("Content-Type", content_type or "application/json"))
        headers.extend(credentials.headers)
        headers.extend(self._impersonation)
        self._tls_for(credentials)
        self.requests += 1
        return self._exchange(method, url, payload, headers)

    def _tls_for(self, credentials):
        """Make the TLS context present ``credentials``' client certificate (a new connection if it changed)."""
        wanted = credentials.certificate()
        if self.context is None or wanted != self._context_for:
            self.context = tls_context(self.config, credentials, self.secrets)
            self._context_for = wanted
            self.close()

    # -- the exchange, under the deadline -------------------------------------------------------

    def _exchange(self, method, url, payload, headers):
        remaining = self.deadline.remaining()
        if self._connection is None:
            self._connection = _Connection(self.server.host, self.server.port, self.context,
                                           self.config.server_name or self.server.host, self.proxy,
                                           self.config.server_name)
        connection = self._connection
        # A request outliving the deadline: the watchdog shuts the socket in use (its TLS handshake included).
        with net.watchdog(remaining, lambda: net.shut(connection.sock)):
            try:
                reused = connection.sock is not None and not connection.closed_while_idle()
                try:
                    response = connection.exchange(method, _target(url), headers, payload, remaining,
                                                   self._sending)
                except (http1.ConnectionClosed, BrokenPipeError, ConnectionResetError):
                    # A kept-alive connection the server (or a proxy in between) closed while idle: Go's
                    # transport dials again for a request that cannot have been served. A GET only: a write's
                    # answer that may be lost is the write commands' to judge (commands/writes.py).
                    if not reused or method != "GET":
                        raise
                    connection.close()
                    response = connection.exchange(method, _target(url), headers, payload,
                                                   self.deadline.remaining(), self._sending)
            except http1.BodyTooLarge:
                self.close()
                raise ResponseTooLarge("server %s sent a response over the %d-byte limit"
                                       % (self.server, MAX_RESPONSE_BYTES)) from None
            except (OSError, http1.ProtocolError) as exc:
                self.close()
                raise self._transport_error(exc) from None
        self._note_server_time(response.header("Date"))
        warning_headers.handle(response.header("Warning"))  # kubectl's "Warning: ..." lines (warning_headers.py)
        return response.status, response.reason, response.header("Content-Type", ""), response.body

    def _sending(self):
        self.sent += 1

    def _transport_error(self, exc):
        server = self.server.shown
        via = " through proxy %s" % self.proxy.display() if self.proxy is not None else ""
        if isinstance(exc, TransportError):
            return exc
        if time.monotonic() >= self.deadline.at or isinstance(exc, socket.timeout):
            return TransportError("no answer from server %s%s within the %d-second deadline"
                                  % (server, via, self.deadline.seconds))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return TransportError("TLS: the certificate of server %s is not trusted: %s%s"
                                  % (server, exc.verify_message or exc.reason or exc.args[-1], _name_hint(exc)))
        if isinstance(exc, ssl.SSLError):
            return TransportError("TLS handshake with server %s%s failed: %s" % (server, via, exc.reason or exc))
        if isinstance(exc, socket.gaierror):
            return TransportError("cannot resolve the host of server %s: %s" % (server, exc.strerror))
        if isinstance(exc, ConnectionRefusedError):
            return TransportError("cannot connect to server %s%s: connection refused" % (server, via))
        if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
            return TransportError("server %s%s reset the connection" % (server, via))
        if isinstance(exc, http1.IncompleteResponse):
            return TransportError("server %s closed the connection in the middle of a response" % server)
        if isinstance(exc, http1.ProtocolError):
            return TransportError("server %s sent a malformed HTTP response (%s)" % (server, exc))
        return TransportError("cannot talk to server %s%s: %s" % (server, via, getattr(exc, "strerror", None) or exc))

    # -- decoding the answer ------------------------------------------------------------------

    def _decode(self, method, path, status, reason, response_type, data):
        return decode(self.server, method, path, status, reason, data)


def decode(server, method, path, status, reason, data):
    """The JSON object of a 2xx answer (``data``: its body bytes); else raise. A redirect is a
    TransportError (never followed), a 2xx without a JSON object too; any other status an
    :class:`~kubectl_aicr.errors.ApiError` carrying the Kubernetes ``Status`` message (k8s.io/apimachinery
    ``pkg/api/errors``), or one line naming the HTTP status when the body is not a Status."""
    if 300 <= status < 400:
        raise TransportError("server %s answered %s %s with a redirect (HTTP %d); redirects are not followed"
                             % (server, method, path, status))
    document = _json_object(data)
    if 200 <= status < 300:
        if document is None:
            raise TransportError("server %s answered %s %s with something other than a JSON object"
                                 % (server, method, path))
        return document
    raise _api_error(server, method, path, status, reason, document)


def _name_hint(exc):
    message = str(exc.verify_message or exc.args[-1] or "")
    if "mismatch" in message.lower() or "legacy Common Name" in message or "valid for" in message:
        return (" (the name must be one of the certificate's subject alternative names, never only its CN, "
                "as in kubectl; tls-server-name sets the name to check)")
    return ""


def _json_object(data):
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _api_error(server, method, path, status, reason, document):
    """An ApiError from an error answer: its Status message, or one line with the HTTP status."""
    if document is not None and document.get("kind") == "Status":
        message = document.get("message")
        status_reason = document.get("reason") if isinstance(document.get("reason"), str) else ""
        if status == 401:
            message = "You must be logged in to the server (%s)" % (message or "Unauthorized")
        if not isinstance(message, str) or not message:
            message = "the server answered %s %s with HTTP %d %s" % (method, path, status, status_reason or reason)
        return ApiError(message, code=status, reason=status_reason, status=document)
    if status == 401:
        return ApiError("You must be logged in to the server (Unauthorized)", code=401, reason="Unauthorized")
    return ApiError("server %s answered %s %s with HTTP %d %s (not a Kubernetes Status)"
                    % (server, method, path, status, reason), code=status)
