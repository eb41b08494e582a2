"""Credentials for a command's requests: headers and the client certificate, from a kubeconfig user.

Behaviour follows client-go (``tools/clientcmd/client_config.go``
``getUserIdentificationPartialConfig``, ``transport/round_trippers.go``
``HTTPWrappersForConfig`` and the impersonating round tripper, ``transport/token_source.go``
``cachingTokenSource``/``NewCachedFileTokenSource``, the oidc auth-provider
``plugin/pkg/client/auth/oidc/oidc.go``, and the exec authenticator, see
:mod:`kubectl_aicr.kube.exec_credential`):

- ``tokenFile`` (read, whitespace trimmed) wins over ``token`` when it can be read;
  either is sent as ``Authorization: Bearer <token>``.
- ``username``/``password``: ``Authorization: Basic base64(UTF-8 "user:password")``.
- ``client-certificate``/``client-key`` as files or ``-data`` (RSA, EC and PKCS#8
  keys). ``ssl`` loads a certificate and key only from a path, so :class:`SecretFiles`
  hands data over as a path: on Linux an anonymous memory file (``os.memfd_create``,
  opened as ``/proc/self/fd/N``; nothing in any folder, gone when closed or when the
  process dies, even by SIGKILL); where that is unavailable (not Linux, ENOSYS, no
  ``/proc``) a 0600 file inside a private (0700) temporary folder, for the moment the TLS
  context loads it, and the folder is removed when the command ends, whatever the exit
  path but SIGKILL. An encrypted key fails at once: nothing ever prompts for a passphrase.
- The oidc auth-provider: its ``id-token`` while it is unexpired (10 s margin, as
  client-go); an expired one is an error that says how to refresh it. The kubeconfig
  is never written.
- An exec plugin runs only when the user has no static credential (token, tokenFile,
  basic auth, client certificate), as client-go's exec authenticator decides, and only when the
  user's kuberc credential plugin policy lets it (:mod:`kubectl_aicr.kube.kuberc`, read once,
  before the first run); its credential is renewed at its expiry and after a 401.
- ``as``, ``as-groups``, ``as-uid``, ``as-user-extra``: the ``Impersonate-*`` headers,
  extra keys escaped as client-go's ``headerKeyEscape`` does.

Nothing here ever puts a secret into an error message.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import base64
import contextlib
import itertools
import json
import os
import time

from .. import helpers
from ..errors import AicrError, AuthError
from ..records import Record
from .kubeconfig import read_file_text

OIDC_EXPIRY_MARGIN = 10.0  # seconds; oidc.go expiryDelta
_HEADER_KEY_BYTES = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class Credentials(Record):
    """What one request presents.

    ``headers``: ((name, value), ...); the client certificate as PEM files (``cert_file``,
    ``key_file``: the user's own paths) or PEM bytes (``cert_data``, ``key_data``);
    ``expires``: epoch seconds after which they must be obtained again (None: never).
    """

    _secret = ("headers", "key_data")  # the Authorization header; the client key

    headers: Tuple[Tuple[str, str], ...] = ()
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    description: str = "no credentials"
    cert_data: Optional[bytes] = None
    key_data: Optional[bytes] = None
    expires: Optional[float] = None

    def certificate(self):
        """A value that is equal for equal client certificates (None: none), to tell when TLS must change."""
        if not (self.cert_file or self.cert_data):
            return None
        return (self.cert_file, self.key_file, self.cert_data, self.key_data)


class SecretFiles:
    """Paths through which ``ssl`` reads credential material; a context manager that always removes them.

    On Linux each is an anonymous memory file (``os.memfd_create``, close-on-exec) read by its path
    ``/proc/self/fd/N``: the material never enters a folder, and the kernel frees it when the
    descriptor is closed (:meth:`remove`, :meth:`close`) or the process ends, however it ends.
    Elsewhere, or when that fails (no ``os.memfd_create``, ENOSYS from an old kernel or a sandbox,
    no ``/proc``), it is a 0600 file in a private (0700) temporary folder under ``TMPDIR``, which
    :meth:`close` removes; while it is open SIGTERM and SIGHUP end the command through an exception,
    so the folder is removed on those exit paths too (only SIGKILL can skip it, and files live in it
    only for the moment a TLS context loads them).
    """

    PROC_FD = "/proc/self/fd"  # where a memory file's descriptor is opened by path (tests point it elsewhere)

    def __init__(self):
        self.folder = None
        self._names = itertools.count(1)
        self._handlers = {}
        self._descriptors = {}  # path -> descriptor of each open memory file

    def write(self, name, data):
        """Hand ``data`` (bytes) to a new memory file, else a new 0600 file in the private folder; its path."""
        path = self._memory_file(name, data)
        if path is not None:
            return path
        if self.folder is None:
            import tempfile  # only where memory files are unavailable
            try:
                self.folder = tempfile.mkdtemp(prefix="kubectl-aicr-")
            except OSError as exc:  # no usable TMPDIR; a relative one in a current folder that was deleted
                raise AuthError("cannot make a private folder for the client certificate and key under %s: %s"
                                % (os.environ.get("TMPDIR") or "the temporary folder", exc.strerror or exc)) from None
        path = os.path.join(self.folder, "%d-%s" % (next(self._names), name))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path

    def _memory_file(self, name, data):
        """The ``/proc/self/fd/N`` path of a memory file holding ``data``, or None where there is none."""
        create = getattr(os, "memfd_create", None)  # Python 3.8+ on Linux only
        if create is None:
            return None
        try:
            fd = create("kubectl-aicr-" + name)  # MFD_CLOEXEC: an exec plugin started later never holds it
        except OSError:  # ENOSYS (kernel older than 3.17), EPERM (a seccomp sandbox), EMFILE ...
            return None
        path = "%s/%d" % (self.PROC_FD, fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.stat(path)  # no /proc (a chroot, a container without it): ssl could not open the path
        except OSError:
            os.close(fd)
            return None
        self._descriptors[path] = fd
        return path

    def remove(self, path):
        """Free what :meth:`write` returned: close its memory file, or remove its file (missing is fine)."""
        fd = self._descriptors.pop(path, None)
        if fd is not None:
            os.close(fd)
            return
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def close(self):
        for path in list(self._descriptors):
            self.remove(path)
        if self.folder is not None:
            import shutil
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        self._restore_signals()

    def _trap_signals(self):
        self._handlers = helpers.end_on_termination()

    def _restore_signals(self):
        helpers.restore_signals(self._handlers)
        self._handlers = {}

    def __enter__(self):
        self._trap_signals()
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def client_certificate_files(credentials, secrets):
    """Yield ``(cert_path, key_path)`` for loading the client certificate (``(None, None)``: none).

    PEM data is handed over through ``secrets`` (:meth:`SecretFiles.write`: a memory file on Linux,
    else a 0600 file in its private folder) and freed when the block ends.
    """
    written = []
    try:
        paths = []
        for path, data, name in ((credentials.cert_file, credentials.cert_data, "client.crt"),
                                 (credentials.key_file, credentials.key_data, "client.key")):
            if data:
                path = secrets.write(name, data)
                written.append(path)
            paths.append(path)
        yield tuple(paths)
    finally:
        for path in written:
            secrets.remove(path)


# ---------------------------------------------------------------------------------------------
# Static credentials


def _token(user):
    """The bearer token: the tokenFile's trimmed content when readable and not empty, else ``token``."""
    if user.token_file:
        try:
            text = read_file_text(user.token_file, what="tokenFile")
        except AicrError as exc:
            text, problem = None, str(exc)
        else:
            problem = "open %s: no such file or directory" % user.token_file if text is None else None
        if text is not None and text.strip():
            return text.strip()
        if not user.token:
            raise AuthError("user %s: %s" % (user.name, problem or 'read empty token from file "%s"'
                                             % user.token_file))
    return user.token


def _basic(username, password):
    raw = ("%s:%s" % (username or "", password or "")).encode("utf-8")
    return "Basic " + base64.b64encode(raw).decode("ascii")


def header_key_escape(key):
    """client-go's ``headerKeyEscape``: percent-encode every UTF-8 byte that is not an HTTP token byte, and ``%``."""
    return "".join(chr(b) if b in _HEADER_KEY_BYTES else "%%%02X" % b for b in key.encode("utf-8"))


def _read_pem(path, user, what):
    try:
        with open(path, "rb") as handle:
            return handle.read(1024 * 1024)
    except OSError as exc:
        raise AuthError("user %s: cannot read %s %s: %s" % (user.name, what, path, exc.strerror or exc)) from None
    except ValueError:  # a NUL in the path: Go's open fails with EINVAL
        raise AuthError("user %s: cannot read %s %s: invalid argument" % (user.name, what, path)) from None


def check_private_key(pem, owner):
    """AuthError at once for an encrypted private key (PKCS#8 ``ENCRYPTED PRIVATE KEY`` or an OpenSSL
    ``Proc-Type: 4,ENCRYPTED`` block): the plugin never prompts for a passphrase."""
    if b"ENCRYPTED PRIVATE KEY" in pem or b"Proc-Type: 4,ENCRYPTED" in pem:
        raise AuthError("the client key of %s is encrypted; kubectl-aicr never asks for a passphrase: "
                        "decrypt it (openssl pkey -in KEY -out KEY.plain) or use an unencrypted key" % owner)
    if b"PRIVATE KEY-----" not in pem:
        raise AuthError("the client key of %s holds no PEM private key" % owner)


def _client_certificate(user):
    """(cert_file, key_file, cert_data, key_data) of a user's client certificate; the key checked."""
    if not (user.client_certificate or user.client_certificate_data):
        return None, None, None, None
    key = user.client_key_data or _read_pem(user.client_key, user, "client-key")
    check_private_key(key, "user %s" % user.name)
    return (None if user.client_certificate_data else user.client_certificate,
            None if user.client_key_data else user.client_key,
            user.client_certificate_data, user.client_key_data)


def _oidc_token(user):
    """The oidc auth-provider's id-token while it is valid; AuthError saying how to refresh it otherwise."""
    config = user.auth_provider.config
    token = config.get("id-token") or ""
    if not token:
        if not config.get("refresh-token"):
            raise AuthError("No valid id-token, and cannot refresh without refresh-token (user %s)" % user.name)
        raise _oidc_refresh_needed(user, "has no id-token")
    expiry = _jwt_expiry(token)
    if expiry is None:
        raise AuthError("the oidc id-token of user %s is not a valid JWT with an exp claim" % user.name)
    if time.time() + OIDC_EXPIRY_MARGIN >= expiry:
        if not config.get("refresh-token"):
            raise AuthError("No valid id-token, and cannot refresh without refresh-token (user %s: its "
                            "id-token expired at %s; log in again)" % (user.name, helpers.format_utc(expiry)))
        raise _oidc_refresh_needed(user, "expired at %s" % helpers.format_utc(expiry))
    return token


def _oidc_refresh_needed(user, what):
    return AuthError("the oidc id-token of user %s %s; kubectl-aicr never writes your kubeconfig, so it does not "
                     "refresh it: run any kubectl command once (e.g. kubectl get --raw /version), which refreshes "
                     "and saves it, or log in again with your OIDC tool, then retry" % (user.name, what))


def _jwt_expiry(token):
    """The ``exp`` claim (epoch seconds, a float) of a JWT; None when absent, not a number, or outside int64."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    if isinstance(expiry, bool) or not isinstance(expiry, (int, float)) or not -(1 << 63) <= expiry < 1 << 63:
        return None  # client-go's oidc jsonTime reads an int64 (or a float64 made one); NaN compares false
    return float(max(int(expiry), _YEAR_ONE))  # an earlier one is shown as 0001-01-01T00:00:00Z (gmtime's range)


_YEAR_ONE = -62135596800  # 0001-01-01T00:00:00Z in epoch seconds


def check_header_value(value, what):
    """AuthError if ``value`` cannot go into an HTTP header (control characters, as Go's net/http refuses)."""
    if any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in value):
        raise AuthError("%s contains a control character (a line break?) and cannot be sent in an HTTP header"
                        % what)
    return value


def static_credentials(user):
    """The :class:`Credentials` of a user's static settings (no exec plugin); impersonation is the
    :class:`~kubectl_aicr.kube.rest.RESTConfig`'s."""
    if user is None:
        return Credentials()
    headers, described = [], []
    token = _token(user)
    if token:
        headers.append(("Authorization", "Bearer " + check_header_value(token, "the token of user %s" % user.name)))
        described.append("bearer token")
    elif user.username or user.password:
        headers.append(("Authorization", _basic(user.username, user.password)))
        described.append("basic auth")
    elif user.auth_provider is not None:
        token = check_header_value(_oidc_token(user), "the oidc id-token of user %s" % user.name)
        headers.append(("Authorization", "Bearer " + token))
        described.append("oidc id-token")
    cert_file, key_file, cert_data, key_data = _client_certificate(user)
    if cert_file or cert_data:
        described.append("client certificate")
    return Credentials(tuple(headers), cert_file, key_file, " and ".join(described) or "no credentials",
                       cert_data, key_data)


def _uses_exec(user):
    """client-go runs the exec plugin only when no token, basic auth or client certificate is set."""
    return (user is not None and user.exec is not None and not user.token and not user.token_file
            and not user.username and not user.password
            and not user.client_certificate and not user.client_certificate_data)


# ---------------------------------------------------------------------------------------------
# Credentials over a command's life


class Authenticator:
    """Gives the credentials for each request: a user's static ones, or an exec plugin's.

    An exec plugin runs at the first request, again when its credential has expired,
    and again after a 401 answer to its credential (:meth:`renew`).
    """

    def __init__(self, user, cluster=None, deadline=None, environ=None, stdin=None):
        self.user = user
        self.cluster = cluster
        self.deadline = deadline
        self.environ = environ
        self.stdin = stdin
        self.runs = 0
        self._cached = None
        self._policy = None  # the kuberc credential plugin policy, read before the first exec run

    @property
    def renewable(self):
        return _uses_exec(self.user)

    def current(self):
        """The credentials to send now (runs the exec plugin when needed)."""
        if self._cached is None or (self._cached.expires is not None and time.time() >= self._cached.expires):
            self._cached = self._obtain()
        return self._cached

    def renew(self, used):
        """After a 401 to ``used``: new exec credentials (None when they cannot change)."""
        if not self.renewable:
            return None
        if used is self._cached:
            self._cached = self._obtain()
        return self._cached if self._cached != used else None

    def _obtain(self):
        static = static_credentials(self.user)
        if not _uses_exec(self.user):
            return static
        from . import exec_credential  # imported only for users with an exec plugin

        if self._policy is None:
            from . import kuberc  # read only for users with an exec plugin

            self._policy = kuberc.load(self.environ)
        self.runs += 1
        result = exec_credential.run(self.user.exec, self.cluster, self.deadline, self.environ, self.stdin,
                                     self._policy)
        headers = [("Authorization", "Bearer " + check_header_value(
            result.token, "the token from the exec plugin of user %s" % self.user.name))] if result.token else []
        if result.cert_pem:
            check_private_key(result.key_pem, "the exec plugin of user %s" % self.user.name)
        described = " and ".join(d for d, present in (("exec plugin token", result.token),
                                                      ("exec plugin client certificate", result.cert_pem)) if present)
        return Credentials(tuple(headers) + static.headers, None, None, described, result.cert_pem or None,
                           result.key_pem or None, result.expires)

