"""HTTPS to the Kubernetes API server: one connection, one deadline, Status errors.

- TLS 1.2 or newer; the server certificate is verified against the cluster's
  CA (only it, when one is given) or the system's CAs, unless the kubeconfig
  sets ``insecure-skip-tls-verify``; ``tls-server-name`` is used for SNI and for
  verification; a certificate whose name is only in its CN is rejected, as Go's
  crypto/x509 rejects it.
- One ``http.client`` connection is reused for all of a command's requests.
- Every request of a command shares one :class:`Deadline` (30 s, the plugin
  page); a watchdog closes the socket when it passes, so a server that
  trickles bytes or never answers cannot hold the command longer.
- Responses are read up to ``MAX_RESPONSE_BYTES``; redirects are never followed.
- An error answer becomes :class:`~kubectl_aicr.errors.ApiError` whose text is
  the Kubernetes ``Status`` message, as kubectl prints it (k8s.io/apimachinery
  ``pkg/api/errors``); a failure to connect becomes one
  :class:`~kubectl_aicr.errors.TransportError` line naming the server.
"""

import http.client
import json
import socket
import ssl
import threading
import time
from urllib.parse import urlencode, urlsplit

from . import __version__
from .errors import ApiError, AuthError, ConfigError, TransportError

DEADLINE_SECONDS = 30.0
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
CHUNK_BYTES = 64 * 1024
USER_AGENT = "kubectl-aicr/%s" % __version__


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


class ServerURL:
    """A parsed cluster ``server``: ``host`` (no brackets), ``port``, ``prefix`` (path, no trailing /), ``text``."""

    def __init__(self, text):
        self.text = text
        try:
            parts = urlsplit(text)
            port = parts.port
        except ValueError as exc:
            raise ConfigError("server %r is not a valid URL (%s)" % (text, exc)) from None
        if parts.scheme != "https":
            raise ConfigError("server %r is not an https:// URL; kubectl-aicr sends credentials only over HTTPS"
                              % text)
        host = parts.hostname or ""
        if not host:
            raise ConfigError("server %r has no host" % text)
        netloc_host = parts.netloc.rsplit("@", 1)[-1]
        if ":" in host and not netloc_host.startswith("["):
            raise ConfigError("server %r: an IPv6 address must be in brackets, e.g. https://[::1]:6443" % text)
        if parts.query or parts.fragment:
            raise ConfigError("server %r must not have a query or fragment" % text)
        self.host = host
        self.port = port or 443
        self.prefix = parts.path.rstrip("/")

    def __str__(self):
        return self.text


def tls_context(cluster, credentials):
    """Build the ``ssl.SSLContext`` for a kubeconfig cluster and the user's client certificate.

    Raises ConfigError for a CA together with insecure-skip-tls-verify (client-go
    refuses that pair) or unreadable CA data, AuthError for a client certificate
    or key that cannot be loaded (an encrypted key fails at once, no prompt).
    """
    has_ca = bool(cluster.certificate_authority or cluster.certificate_authority_data)
    if cluster.insecure_skip_tls_verify and has_ca:
        raise ConfigError("cluster %r: specifying a root certificates file with the insecure flag is not allowed"
                          % cluster.name)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.hostname_checks_common_name = False
    except (AttributeError, ValueError):  # pragma: no cover - OpenSSL builds without the flag
        pass
    if cluster.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif has_ca:
        _load_ca(context, cluster)
    else:
        context.load_default_certs()
    if credentials.cert_file:
        _load_client_certificate(context, credentials)
    return context


def _load_ca(context, cluster):
    try:
        if cluster.certificate_authority_data:
            context.load_verify_locations(cadata=cluster.certificate_authority_data.decode("ascii", "replace"))
        else:
            context.load_verify_locations(cafile=cluster.certificate_authority)
    except FileNotFoundError:
        raise ConfigError("cluster %r: certificate-authority %s does not exist"
                          % (cluster.name, cluster.certificate_authority)) from None
    except (ssl.SSLError, ValueError, OSError):
        which = "certificate-authority-data" if cluster.certificate_authority_data else \
            "certificate-authority %s" % cluster.certificate_authority
        raise ConfigError("cluster %r: %s holds no usable PEM certificate" % (cluster.name, which)) from None


class _EncryptedKey(Exception):
    pass


def _no_password():
    raise _EncryptedKey()


def _load_client_certificate(context, credentials):
    try:
        context.load_cert_chain(credentials.cert_file, credentials.key_file, password=_no_password)
    except _EncryptedKey:
        raise AuthError("the client key is encrypted; kubectl-aicr cannot use an encrypted key "
                        "(decrypt it, e.g. with openssl pkey)") from None
    except ssl.SSLError as exc:
        if "_EncryptedKey" in repr(exc.__context__):  # pragma: no cover - depends on the ssl module
            raise AuthError("the client key is encrypted; kubectl-aicr cannot use an encrypted key") from None
        raise AuthError("the client certificate and key cannot be used together (%s)"
                        % (exc.reason or "not a matching certificate and key")) from None
    except OSError as exc:
        raise AuthError("cannot read the client certificate or key: %s" % (exc.strerror or exc)) from None


class _Connection(http.client.HTTPSConnection):
    """An HTTPSConnection whose TLS server name (SNI and verification) may differ from the host."""

    def __init__(self, host, port, context, server_name, timeout):
        super().__init__(host, port, context=context, timeout=timeout)
        self._server_name = server_name

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock = self._context.wrap_socket(sock, server_hostname=self._server_name)
        except BaseException:
            sock.close()
            raise
        self.handshakes += 1

    handshakes = 0


class Client:
    """Requests to one API server over one reused connection, inside one :class:`Deadline`.

    ``request`` returns the decoded JSON object (dict) of a 2xx answer and raises
    ApiError (an error answer), TransportError (could not connect, TLS failed,
    deadline passed, response too large, not JSON, a redirect).
    """

    def __init__(self, cluster, credentials, deadline=None):
        self.server = ServerURL(cluster.server)
        self.cluster = cluster
        self.credentials = credentials
        self.deadline = deadline or Deadline()
        self.context = tls_context(cluster, credentials)
        self.requests = 0
        self._connection = None

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
        url = self.server.prefix + path + ("?" + urlencode(query) if query else "")
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        headers.update(self.credentials.headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = content_type or "application/json"
        self.requests += 1
        status, reason, response_type, data = self._exchange(method, url, payload, headers)
        return self._decode(method, path, status, reason, response_type, data)

    # -- the exchange, under the deadline -------------------------------------------------------

    def _exchange(self, method, url, payload, headers):
        remaining = self.deadline.remaining()
        if self._connection is None:
            self._connection = _Connection(self.server.host, self.server.port, self.context,
                                           self.cluster.tls_server_name or self.server.host, remaining)
        connection = self._connection
        connection.timeout = remaining
        if connection.sock is not None:
            connection.sock.settimeout(remaining)
        watchdog = threading.Timer(remaining, _abort, (connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request(method, url, body=payload, headers=headers)
            response = connection.getresponse()
            data = self._read_body(response)
            return response.status, response.reason, response.getheader("Content-Type", ""), data
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise self._transport_error(exc) from None
        finally:
            watchdog.cancel()

    def _read_body(self, response):
        length = response.getheader("Content-Length")
        if length and length.isdigit() and int(length) > MAX_RESPONSE_BYTES:
            raise TransportError("server %s sent a response of %s bytes, over the %d-byte limit"
                                 % (self.server, length, MAX_RESPONSE_BYTES))
        chunks, total = [], 0
        while True:
            self.deadline.remaining()
            if response.fp is not None and self._connection is not None and self._connection.sock is not None:
                self._connection.sock.settimeout(self.deadline.remaining())
            chunk = response.read(CHUNK_BYTES)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_RESPONSE_BYTES:
                self.close()
                raise TransportError("server %s sent a response over the %d-byte limit"
                                     % (self.server, MAX_RESPONSE_BYTES))
            chunks.append(chunk)
        return b"".join(chunks)

    def _transport_error(self, exc):
        server = self.server.text
        if isinstance(exc, TransportError):
            return exc
        if time.monotonic() >= self.deadline.at or isinstance(exc, socket.timeout):
            return TransportError("no answer from server %s within the %d-second deadline"
                                  % (server, self.deadline.seconds))
        if isinstance(exc, ssl.SSLCertVerificationError):
            return TransportError("TLS: the certificate of server %s is not trusted: %s"
                                  % (server, exc.verify_message or exc.reason))
        if isinstance(exc, ssl.SSLError):
            return TransportError("TLS handshake with server %s failed: %s" % (server, exc.reason or exc))
        if isinstance(exc, socket.gaierror):
            return TransportError("cannot resolve the host of server %s: %s" % (server, exc.strerror))
        if isinstance(exc, ConnectionRefusedError):
            return TransportError("cannot connect to server %s: connection refused" % server)
        if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
            return TransportError("server %s reset the connection" % server)
        if isinstance(exc, http.client.IncompleteRead):
            return TransportError("server %s closed the connection in the middle of a response" % server)
        if isinstance(exc, http.client.HTTPException):
            return TransportError("server %s sent a malformed HTTP response (%s)" % (server, type(exc).__name__))
        return TransportError("cannot talk to server %s: %s" % (server, getattr(exc, "strerror", None) or exc))

    # -- decoding the answer ------------------------------------------------------------------

    def _decode(self, method, path, status, reason, response_type, data):
        if 300 <= status < 400:
            raise TransportError("server %s answered %s %s with a redirect (HTTP %d); redirects are not followed"
                                 % (self.server, method, path, status))
        document = _json_object(data)
        if 200 <= status < 300:
            if document is None:
                raise TransportError("server %s answered %s %s with something other than a JSON object"
                                     % (self.server, method, path))
            return document
        raise _api_error(self.server, method, path, status, reason, document)


def _abort(connection):
    """Watchdog: end a request that has outlived the deadline by shutting its socket down."""
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


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
