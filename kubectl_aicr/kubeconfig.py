"""Kubeconfig: find the files, read them, merge them and choose a context.

The loading rules are client-go's (``k8s.io/client-go/tools/clientcmd``,
``loader.go`` and ``client_config.go``):

- ``--kubeconfig PATH``: that one file, which must exist.
- else ``$KUBECONFIG``: paths split by ``os.pathsep``; empty entries and
  repeated paths are skipped, missing files are skipped, a folder or an
  unreadable file is an error naming it.
- else ``~/.kube/config`` (missing: an empty configuration).
- Merging: for clusters, users (AuthInfos) and contexts, the first file that
  defines a name wins with its whole entry; ``current-context`` comes from the
  first file that sets it to a non-empty value.
- Relative paths in a file (certificate-authority, client-certificate,
  client-key, tokenFile, an exec command containing a slash) are resolved
  against the folder of the file that defined that entry.
- A name used twice in one file is an error (clientcmd's v1 conversion).

Unlike kubectl, a configuration that names no usable cluster is an error here,
never a silent fallback to ``http://localhost:8080``.
"""

import base64
import binascii
import os
from typing import Dict, List, NamedTuple, Optional

from . import yamlreader
from .errors import ConfigError

MAX_KUBECONFIG_BYTES = 64 * 1024 * 1024


class Cluster(NamedTuple):
    """A kubeconfig ``clusters[].cluster`` entry. Paths are absolute; ``*_data`` are decoded bytes."""

    name: str
    server: str
    certificate_authority: Optional[str] = None
    certificate_authority_data: Optional[bytes] = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: Optional[str] = None
    proxy_url: Optional[str] = None
    source: str = ""


class User(NamedTuple):
    """A kubeconfig ``users[].user`` entry (client-go's AuthInfo)."""

    name: str
    token: Optional[str] = None
    token_file: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None
    client_certificate: Optional[str] = None
    client_certificate_data: Optional[bytes] = None
    client_key: Optional[str] = None
    client_key_data: Optional[bytes] = None
    exec: Optional[dict] = None
    auth_provider: Optional[dict] = None
    impersonate: Optional[str] = None
    impersonate_uid: Optional[str] = None
    impersonate_groups: tuple = ()
    impersonate_extra: tuple = ()   # ((key, (values...)), ...)
    source: str = ""


class Context(NamedTuple):
    """A kubeconfig ``contexts[].context`` entry."""

    name: str
    cluster: str
    user: str
    namespace: Optional[str] = None
    source: str = ""


class Config(NamedTuple):
    """The merged configuration: entries by name, the current context and the files read, in order."""

    clusters: Dict[str, Cluster]
    users: Dict[str, User]
    contexts: Dict[str, Context]
    current_context: str
    files: List[str]


class Selection(NamedTuple):
    """What a command connects with: the chosen context, its cluster and its user (None: no credentials)."""

    context: Context
    cluster: Cluster
    user: Optional[User]


# ---------------------------------------------------------------------------------------------
# Finding and reading files


def kubeconfig_paths(explicit=None, environ=None):
    """Return ``(paths, explicit)``: the files to read in precedence order, per client-go's loading rules.

    ``explicit`` is the ``--kubeconfig`` value; ``environ`` defaults to ``os.environ``.
    """
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return [explicit], True
    value = environ.get("KUBECONFIG")
    if value:
        seen, paths = set(), []
        for entry in value.split(os.pathsep):
            if entry and entry not in seen:
                seen.add(entry)
                paths.append(entry)
        return paths, False
    home = environ.get("HOME") or os.path.expanduser("~")
    if not home or home == "~":
        return [], False
    return [os.path.join(home, ".kube", "config")], False


def read_file_text(path, what="kubeconfig"):
    """Read a UTF-8 file (at most MAX_KUBECONFIG_BYTES); ConfigError naming the file on any failure.

    Returns None for a missing file.
    """
    try:
        if os.path.isdir(path):
            raise ConfigError("%s %s is a folder, not a file" % (what, path))
        with open(path, "rb") as handle:
            data = handle.read(MAX_KUBECONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError("cannot read %s %s: %s" % (what, path, exc.strerror or exc)) from None
    if len(data) > MAX_KUBECONFIG_BYTES:
        raise ConfigError("%s %s is larger than %d bytes" % (what, path, MAX_KUBECONFIG_BYTES))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("%s %s is not UTF-8 text (byte %d)" % (what, path, exc.start)) from None


def load(explicit=None, environ=None):
    """Read and merge the kubeconfig files; return a :class:`Config`.

    Raises ConfigError for an explicit file that is missing, a folder, an
    unreadable or malformed file (with file, line and column), or a name used twice in one file.
    """
    paths, is_explicit = kubeconfig_paths(explicit, environ)
    merged = Config({}, {}, {}, "", [])
    for path in paths:
        text = read_file_text(path)
        if text is None:
            if is_explicit:
                raise ConfigError("kubeconfig %s does not exist" % path)
            continue
        document = yamlreader.load(text, filename=path)
        one = parse_document(document, path)
        merged = Config(
            clusters={**one.clusters, **merged.clusters},
            users={**one.users, **merged.users},
            contexts={**one.contexts, **merged.contexts},
            current_context=merged.current_context or one.current_context,
            files=merged.files + [path])
    return merged


# ---------------------------------------------------------------------------------------------
# One document -> Config


def _where(path, section, name=None):
    return "%s in %s" % (section if name is None else "%s %r" % (section, name), path)


def _mapping(value, what):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError("%s must be a mapping, not %s" % (what, _type_name(value)))
    return value


def _sequence(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError("%s must be a list, not %s" % (what, _type_name(value)))
    return value


def _type_name(value):
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", bytes: "binary data"}.get(type(value), type(value).__name__)


def _string(entry, key, what):
    """A string field; null or absent is None; a number is taken as its text (as sigs.k8s.io/yaml does)."""
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if not isinstance(value, str):
        raise ConfigError("%s: %s must be a string, not %s" % (what, key, _type_name(value)))
    return value


def _bool(entry, key, what):
    value = entry.get(key)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError("%s: %s must be true or false, not %r" % (what, key, value))


def _path(entry, key, what, folder):
    value = _string(entry, key, what)
    if not value:
        return None
    value = os.path.expanduser(value) if value.startswith("~") else value
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(folder, value))


def decode_data(entry, key, what):
    """A ``*-data`` field: base64 text (line-wrapped allowed) or ``!!binary`` bytes -> bytes.

    Raw PEM where base64 belongs is refused with a hint, as is anything that is not base64.
    """
    value = entry.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise ConfigError("%s: %s must be base64 text, not %s" % (what, key, _type_name(value)))
    if "-----BEGIN" in value:
        raise ConfigError("%s: %s holds PEM text, but it must be base64-encoded PEM "
                          "(base64 -w0 the file, or name the file with %s)"
                          % (what, key, key[:-len("-data")]))
    compact = "".join(value.split())
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError("%s: %s is not valid base64" % (what, key)) from None


def _named_entries(document, section, path):
    """Yield (name, body) for ``section`` (clusters/users/contexts); duplicate names are an error."""
    inner_key = {"clusters": "cluster", "users": "user", "contexts": "context"}[section]
    seen = set()
    for index, item in enumerate(_sequence(document.get(section), "%s in %s" % (section, path))):
        item = _mapping(item, "%s[%d] in %s" % (section, index, path))
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError("%s[%d] in %s has no name" % (section, index, path))
        if name in seen:
            raise ConfigError("%s: the name %r is used twice in %s" % (path, name, section))
        seen.add(name)
        yield name, _mapping(item.get(inner_key), "%s %r in %s" % (inner_key, name, path))


def parse_document(document, path):
    """Turn one parsed kubeconfig document (dict or None) into a :class:`Config` (paths made absolute)."""
    if document is None:
        return Config({}, {}, {}, "", [path])
    document = _mapping(document, "kubeconfig %s" % path)
    folder = os.path.dirname(os.path.abspath(path))
    clusters = {name: _cluster(name, body, path, folder)
                for name, body in _named_entries(document, "clusters", path)}
    users = {name: _user(name, body, path, folder) for name, body in _named_entries(document, "users", path)}
    contexts = {}
    for name, body in _named_entries(document, "contexts", path):
        what = _where(path, "context", name)
        contexts[name] = Context(name=name, cluster=_string(body, "cluster", what) or "",
                                 user=_string(body, "user", what) or "",
                                 namespace=_string(body, "namespace", what), source=path)
    current = _string(document, "current-context", path) or ""
    return Config(clusters, users, contexts, current, [path])


def _cluster(name, body, path, folder):
    what = _where(path, "cluster", name)
    return Cluster(
        name=name, server=_string(body, "server", what) or "",
        certificate_authority=_path(body, "certificate-authority", what, folder),
        certificate_authority_data=decode_data(body, "certificate-authority-data", what),
        insecure_skip_tls_verify=_bool(body, "insecure-skip-tls-verify", what),
        tls_server_name=_string(body, "tls-server-name", what),
        proxy_url=_string(body, "proxy-url", what), source=path)


def _user(name, body, path, folder):
    what = _where(path, "user", name)
    exec_config = body.get("exec")
    if exec_config is not None:
        exec_config = dict(_mapping(exec_config, "%s: exec" % what))
        command = exec_config.get("command")
        if isinstance(command, str) and "/" in command and not os.path.isabs(command):
            exec_config["command"] = os.path.normpath(os.path.join(folder, command))
    auth_provider = body.get("auth-provider")
    if auth_provider is not None:
        auth_provider = _mapping(auth_provider, "%s: auth-provider" % what)
    groups = tuple(str(g) for g in _sequence(body.get("as-groups"), "%s: as-groups" % what))
    extra = tuple((str(k), tuple(str(v) for v in _sequence(vals, "%s: as-user-extra" % what)))
                  for k, vals in _mapping(body.get("as-user-extra"), "%s: as-user-extra" % what).items())
    return User(
        name=name, token=_string(body, "token", what),
        token_file=_path(body, "tokenFile", what, folder),
        username=_string(body, "username", what), password=_string(body, "password", what),
        client_certificate=_path(body, "client-certificate", what, folder),
        client_certificate_data=decode_data(body, "client-certificate-data", what),
        client_key=_path(body, "client-key", what, folder),
        client_key_data=decode_data(body, "client-key-data", what),
        exec=exec_config, auth_provider=auth_provider,
        impersonate=_string(body, "as", what), impersonate_uid=_string(body, "as-uid", what),
        impersonate_groups=groups, impersonate_extra=extra, source=path)


# ---------------------------------------------------------------------------------------------
# Choosing the context


def select(config, context_name=None):
    """Choose the context (``--context``, else the current context) and return a :class:`Selection`.

    Raises ConfigError naming what is missing: no kubeconfig at all, no current
    context, an unknown context, or a context's undefined cluster or user, or a
    cluster with no server.
    """
    name = context_name or config.current_context
    if not name:
        if not config.contexts and not config.clusters:
            files = ", ".join(config.files) if config.files else "no kubeconfig file found"
            raise ConfigError("no configuration: no cluster is defined (read: %s); "
                              "use --kubeconfig or set KUBECONFIG" % files)
        raise ConfigError("no context chosen: the kubeconfig has no current-context; use --context NAME "
                          "(contexts: %s)" % (", ".join(sorted(config.contexts)) or "none"))
    context = config.contexts.get(name)
    if context is None:
        raise ConfigError("context %r is not defined in the kubeconfig (%s)" % (name, ", ".join(config.files)))
    if not context.cluster:
        raise ConfigError("context %r names no cluster" % name)
    cluster = config.clusters.get(context.cluster)
    if cluster is None:
        raise ConfigError("context %r names cluster %r, which is not defined" % (name, context.cluster))
    user = None
    if context.user:
        user = config.users.get(context.user)
        if user is None:
            raise ConfigError("context %r names user %r, which is not defined" % (name, context.user))
    if not cluster.server:
        raise ConfigError("cluster %r (context %r) has no server" % (cluster.name, name))
    return Selection(context, cluster, user)
