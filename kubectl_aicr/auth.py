"""Credentials for one request stream: headers and the client certificate, from a kubeconfig user.

Behaviour follows client-go (``k8s.io/client-go/rest/transport.go`` and
``tools/clientcmd/client_config.go``):

- ``tokenFile`` (read, whitespace trimmed) wins over ``token``; either is sent
  as ``Authorization: Bearer <token>``.
- ``username``/``password``: ``Authorization: Basic base64(UTF-8 "user:password")``.
- ``client-certificate``/``client-key`` as files or ``-data``. Data is written
  only into a 0600 file inside a private (0700) temporary folder that
  :class:`SecretFiles` removes when the command ends, whatever the exit path.
- ``as``, ``as-groups``, ``as-uid``, ``as-user-extra``: the ``Impersonate-*`` headers.

Nothing here ever puts a secret into an error message.
"""

import base64
import os
import shutil
import tempfile
from typing import NamedTuple, Optional, Tuple
from urllib.parse import quote

from .errors import AuthError
from .kubeconfig import read_file_text


class Credentials(NamedTuple):
    """``headers``: ((name, value), ...); ``cert_file``/``key_file``: PEM paths for the TLS client certificate."""

    headers: Tuple[Tuple[str, str], ...] = ()
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    description: str = "no credentials"


class SecretFiles:
    """A private temporary folder for credential material; a context manager that always removes it."""

    def __init__(self):
        self.folder = None

    def write(self, name, data):
        """Write ``data`` (bytes) to a new 0600 file in the private folder; return its path."""
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix="kubectl-aicr-")
        path = os.path.join(self.folder, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path

    def close(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_token_file(user):
    try:
        text = read_file_text(user.token_file, what="tokenFile of user %r:" % user.name)
    except Exception as exc:  # ConfigError from the reader: re-raise as an AuthError, same words
        raise AuthError(str(exc)) from None
    if text is None:
        raise AuthError("tokenFile of user %r: %s does not exist" % (user.name, user.token_file))
    return text.strip()


def _basic(username, password):
    raw = ("%s:%s" % (username or "", password or "")).encode("utf-8")
    return "Basic " + base64.b64encode(raw).decode("ascii")


def _impersonation(user):
    headers = []
    if user.impersonate:
        headers.append(("Impersonate-User", user.impersonate))
    if user.impersonate_uid:
        headers.append(("Impersonate-Uid", user.impersonate_uid))
    for group in user.impersonate_groups:
        headers.append(("Impersonate-Group", group))
    for key, values in user.impersonate_extra:
        for value in values:
            headers.append(("Impersonate-Extra-" + quote(key, safe=""), value))
    return headers


def _pem_file(user, data, path, name, secrets):
    """The path of a PEM file: ``data`` written to the private folder, else ``path``, which must exist."""
    if data:
        return secrets.write(name, data)
    if path and not os.path.isfile(path):
        raise AuthError("user %r: %s does not exist" % (user.name, path))
    return path


def _client_certificate(user, secrets):
    cert_file = _pem_file(user, user.client_certificate_data, user.client_certificate, "client.crt", secrets)
    key_file = _pem_file(user, user.client_key_data, user.client_key, "client.key", secrets)
    if bool(cert_file) != bool(key_file):
        missing = "client-key" if cert_file else "client-certificate"
        raise AuthError("user %r has a client certificate or key but no %s" % (user.name, missing))
    return cert_file, key_file


def credentials(user, secrets):
    """Return the :class:`Credentials` for ``user`` (a kubeconfig.User or None: anonymous).

    Raises AuthError for credentials the plugin cannot use: a missing file, an
    exec plugin or auth-provider (not supported by this version), half a client certificate.
    """
    if user is None:
        return Credentials()
    if user.exec is not None:
        raise AuthError("user %r uses an exec credential plugin, which this version of kubectl-aicr "
                        "does not run yet" % user.name)
    if user.auth_provider is not None:
        raise AuthError("user %r uses the auth-provider %r, which kubectl-aicr does not support"
                        % (user.name, user.auth_provider.get("name")))
    headers, described = [], []
    token = _read_token_file(user) if user.token_file else user.token
    if token:
        headers.append(("Authorization", "Bearer " + token))
        described.append("bearer token")
    elif user.username or user.password:
        headers.append(("Authorization", _basic(user.username, user.password)))
        described.append("basic auth")
    cert_file, key_file = _client_certificate(user, secrets)
    if cert_file:
        described.append("client certificate")
    headers.extend(_impersonation(user))
    return Credentials(tuple(headers), cert_file, key_file, " and ".join(described) or "no credentials")
