"""Kubeconfig: find the files, read them, merge them and choose a context.

The loading rules are client-go's (``k8s.io/client-go/tools/clientcmd``, ``loader.go``
and ``client_config.go``; the in-cluster rules are ``rest/config.go`` ``InClusterConfig``):

- ``--kubeconfig PATH``: that one file, which must exist.
- else ``$KUBECONFIG``: paths split by ``os.pathsep``; empty entries and repeated
  paths are skipped, missing files are skipped, a folder or an unreadable file is an
  error naming it.
- else ``~/.kube/config`` (missing: an empty configuration).
- An empty or comment-only file is an empty configuration. Files in the plain block style
  kubectl writes are read by :mod:`kubectl_aicr.kube.yaml.block` (fast), anything else by the
  full YAML reader; both give the same values, resolved as kubectl's go-yaml v2 resolves
  them (YAML 1.1: ``yes``/``no``/``on``/``off``/``y``/``n`` are booleans, ``!!binary`` gives
  its decoded bytes as text, merge keys apply; see :class:`kubectl_aicr.kube.yaml.reader._Parser`).
- Merging: for clusters, users (AuthInfos) and contexts, the first file that defines a
  name wins with its whole entry; ``current-context`` comes from the first file that
  sets it to a non-empty value.
- Relative paths (certificate-authority, client-certificate, client-key, tokenFile, an
  exec command containing a slash) are resolved against the folder of the file that
  defined that entry (``ResolveLocalPaths``; ``~`` is not expanded, as in client-go).
- A name used twice in one file is an error (the v1 conversion's "duplicate name"), in the
  clusters, users and contexts lists and in every ``extensions`` list.
- Field types are checked as kubectl's JSON decoding checks them: a number or a boolean
  where a string belongs is an error naming the field (never its value), ``null`` is the
  same as absent, a ``*-data`` field is base64 text (so ``!!binary`` there must hold
  base64 of base64, as kubectl decodes it twice).
- No context chosen (no ``--context``, no current-context): the in-cluster
  configuration when ``KUBERNETES_SERVICE_HOST``/``_PORT`` are set and the service
  account token exists, as kubectl does.

Unlike kubectl, a configuration that names no usable cluster is an error here, never a
silent fallback to ``http://localhost:8080``; see :func:`select`.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import base64
import binascii
import os
import re
import stat
from collections.abc import Mapping

from . import kuberc, validation
from .yaml import block
from ..errors import ConfigError, YAMLError
from ..records import Record

MAX_KUBECONFIG_BYTES = 64 * 1024 * 1024
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
EXEC_EXTENSION = "client.authentication.k8s.io/exec"  # client_config.go clusterExtensionKey

# The records below are client-go's clientcmd/api types.go (Cluster, AuthInfo, ExecConfig,
# AuthProviderConfig, Context, Config), field by field where the plugin uses them, in snake case.
# ``location_of_origin``: the file the entry came from (client-go's LocationOfOrigin; "in-cluster"
# for the in-cluster configuration).


class Cluster(Record):
    """A kubeconfig ``clusters[].cluster`` entry. Paths are absolute; ``*_data`` are decoded bytes;
    ``extensions``: its ``extensions`` list by name, each a JSON value (None: the entry has none)."""

    _secret = ("proxy_url",)  # may carry a user and password (http://u:p@proxy:3128)

    name: str
    server: str
    certificate_authority: Optional[str] = None
    certificate_authority_data: Optional[bytes] = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: Optional[str] = None
    proxy_url: Optional[str] = None
    extensions: Optional[Dict[str, object]] = None  # EXEC_EXTENSION's value goes to an exec plugin
    location_of_origin: str = ""

    def exec_extension(self):
        """The JSON value of the extension named ``client.authentication.k8s.io/exec``, or None: what an exec
        plugin receives as ``spec.cluster.config`` (client_config.go ``clusterExtensionKey``)."""
        return (self.extensions or {}).get(EXEC_EXTENSION)


class ExecConfig(Record):
    """A user's ``exec`` credential plugin (client-go ``api.ExecConfig``). ``env``: ((name, value), ...)."""

    _secret = ("args", "env")  # either may carry a credential

    command: str
    args: Tuple[str, ...] = ()
    env: Tuple[Tuple[str, str], ...] = ()
    api_version: str = ""
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = ""


class AuthProvider(Record):
    """A user's legacy ``auth-provider`` (client-go ``api.AuthProviderConfig``): its name and string config."""

    _secret = ("config",)  # id-token, refresh-token, client-secret

    name: str
    config: Dict[str, str]


class AuthInfo(Record):
    """A kubeconfig ``users[].user`` entry (client-go ``api.AuthInfo``); ``impersonate*`` are its ``as*``
    fields, ``impersonate_extra``: ((key, (values...)), ...)."""

    _secret = ("token", "password", "client_key_data")

    name: str
    token: Optional[str] = None
    token_file: Optional[str] = None
    username: Optional[str] = None
    password: Optional[str] = None
    client_certificate: Optional[str] = None
    client_certificate_data: Optional[bytes] = None
    client_key: Optional[str] = None
    client_key_data: Optional[bytes] = None
    exec: Optional[ExecConfig] = None
    auth_provider: Optional[AuthProvider] = None
    impersonate: Optional[str] = None
    impersonate_uid: Optional[str] = None
    impersonate_groups: Tuple[str, ...] = ()
    impersonate_extra: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    location_of_origin: str = ""


class Context(Record):
    """A kubeconfig ``contexts[].context`` entry: the names of its cluster and AuthInfo (``user`` in the file)."""

    name: str
    cluster: str
    auth_info: str
    namespace: Optional[str] = None
    location_of_origin: str = ""


class Config(Record):
    """The merged configuration: entries by name (clusters and AuthInfos are built when first read, see
    :class:`_Records`), the current context and the files read, in order."""

    clusters: _Records  # name -> Cluster
    auth_infos: _Records  # name -> AuthInfo
    contexts: Dict[str, Context]
    current_context: str
    files: List[str]


class Selection(Record):
    """What a command connects with: the chosen context, its cluster and its AuthInfo (None: no credentials)."""

    context: Context
    cluster: Cluster
    auth_info: Optional[AuthInfo]


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
        mode = os.stat(path).st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError("%s %s is a folder, not a file" % (what, path))
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # opening a pipe would wait for a writer, past the deadline
            raise ConfigError("%s %s is a pipe or socket, not a file" % (what, path))
        with open(path, "rb") as handle:
            data = handle.read(MAX_KUBECONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError("cannot read %s %s: %s" % (what, path, exc.strerror or exc)) from None
    except ValueError:  # a NUL in the path (Python's "embedded null byte"): no file has that name (Go: EINVAL)
        raise ConfigError("cannot read %s %s: invalid argument (the path holds a NUL)" % (what, path)) from None
    if len(data) > MAX_KUBECONFIG_BYTES:
        raise ConfigError("%s %s is larger than %d bytes" % (what, path, MAX_KUBECONFIG_BYTES))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError("%s %s is not UTF-8 text (byte %d)" % (what, path, exc.start)) from None


def load(explicit=None, environ=None):
    """Read and merge the kubeconfig files; return a :class:`Config`.

    Raises ConfigError for an explicit file that is missing, a folder, an unreadable
    or malformed file (with file, line and column), or a name used twice in one file.
    """
    paths, is_explicit = kubeconfig_paths(explicit, environ)
    clusters, auth_infos, contexts, current, files = _Records(), _Records(), {}, "", []
    for path in paths:
        text = read_file_text(path)
        if text is None:
            if is_explicit:
                raise ConfigError("kubeconfig %s does not exist" % path)
            continue
        one = parse_document(read_document(text, path), path)
        clusters.merge(one.clusters)
        auth_infos.merge(one.auth_infos)
        for name, entry in one.contexts.items():
            contexts.setdefault(name, entry)
        current = current or one.current_context
        files.append(path)
    return Config(clusters, auth_infos, contexts, current, files)


def read_document(text, path):
    """The YAML (or JSON) document of a kubeconfig file: the fast reader for the plain block style that
    kubectl and its generators write (see :mod:`kubectl_aicr.kube.yaml.block`), else the full YAML reader."""
    if not text.strip():
        return None
    document = block.load(text, block.GO_YAML)
    if document is None:
        from .yaml import reader  # the full reader is compiled and loaded only when needed

        try:
            document = reader.load(text, filename=path, schema=reader.GO_YAML)
        except YAMLError as exc:
            # The position, never the text: a refused tag, alias or escape may sit in a token or password.
            problem = re.sub(r"'[^']*'|\"[^\"]*\"|\\\S*", "(...)", exc.problem)
            raise ConfigError("kubeconfig %s:%d:%d: %s" % (exc.filename, exc.line, exc.column, problem)) from None
    return document


# ---------------------------------------------------------------------------------------------
# One document -> Config. Field access is strict about types, as kubectl's JSON decoding is.


class _Fields:
    """Typed access to one mapping of a kubeconfig: ``what`` names it in errors (file and entry)."""

    __slots__ = ("body", "_parent", "_name")

    def __init__(self, body, name, parent=None):
        self._parent, self._name = parent, name  # ``what`` is only spelled out for an error
        if body is not None and not isinstance(body, dict):
            raise ConfigError("%s must be a mapping, not %s" % (self.what, _type_name(body)))
        self.body = body or {}

    @property
    def what(self):
        return str(self._name) if self._parent is None else "%s: %s" % (self._parent.what, self._name)

    def fail(self, key, expected, value):
        raise ConfigError("%s: %s must be %s, not %s" % (self.what, key, expected, _type_name(value)))

    def string(self, key):
        """A string field; null or absent is None."""
        value = self.body.get(key)
        if value is None or isinstance(value, str):
            return value
        self.fail(key, "a string", value)

    def boolean(self, key):
        value = self.body.get(key)
        if value is None or isinstance(value, bool):
            return bool(value)
        self.fail(key, "true or false", value)

    def strings(self, key):
        """A list of strings; null or absent is ()."""
        value = self.body.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail(key, "a list", value)
        for item in value:
            if not isinstance(item, str):
                self.fail(key + "[]", "a string", item)
        return tuple(value)

    def mapping(self, key):
        return _Fields(self.body.get(key), key, self)

    def path(self, key, folder):
        """A file path resolved against ``folder`` (the folder of the file that defined the entry)."""
        value = self.string(key)
        if not value:
            return None
        return value if os.path.isabs(value) else os.path.normpath(os.path.join(folder, value))

    def data(self, key):
        """A ``*-data`` field: base64 text -> bytes (see :func:`decode_base64`).

        A ``!!binary`` node is text here already (its decoded bytes), base64-decoded once more.
        """
        value = self.body.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.fail(key, "base64 text", value)
        return decode_base64(value, "%s: %s" % (self.what, key), key)


class _Where:
    """A name for messages, formatted only when a message needs it."""

    __slots__ = ("form", "args")

    def __init__(self, form, args):
        self.form, self.args = form, args

    def __str__(self):
        return self.form % self.args


def _type_name(value):
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", bytes: "binary data"}.get(type(value), type(value).__name__)


def decode_base64(value, what, key="data"):
    """Base64 text -> bytes, as Go's encoding/json decodes ``[]byte``: line breaks are ignored,
    anything else that is not base64 (spaces included) is an error naming the offset.

    Raw PEM where base64 belongs is refused with a hint.
    """
    if "-----BEGIN" in value:
        raise ConfigError("%s holds PEM text, but it must be base64-encoded PEM (base64 -w0 the file, "
                          "or name the file with %s instead)" % (what, key[:-len("-data")] if key.endswith("-data")
                                                                 else "a path"))
    compact = value.replace("\r", "").replace("\n", "")
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError("%s is not valid base64 (illegal base64 data at input byte %d)"
                          % (what, _first_bad_base64_byte(compact))) from None


def _first_bad_base64_byte(text):
    alphabet = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    for index, char in enumerate(text):
        if char not in alphabet:
            return index
    return len(text)


def _named_entries(document, section, path):
    """Yield (index, name, body) for ``section`` (clusters/users/contexts); a name used twice is an error."""
    inner_key = {"clusters": "cluster", "users": "user", "contexts": "context"}[section]
    items = document.body.get(section)
    if items is None:
        return
    if not isinstance(items, list):
        document.fail(section, "a list", items)
    seen = set()
    for index, item in enumerate(items):
        entry = _Fields(item, _Where("kubeconfig %s: %s[%d]", (path, section, index)))
        name = entry.string("name") or ""
        if name in seen:
            raise ConfigError('kubeconfig %s: duplicate name "%s" in %s' % (path, name, section))
        seen.add(name)
        yield name, entry.mapping(inner_key)


def parse_document(document, path):
    """Turn one parsed kubeconfig document (dict or None) into a :class:`Config` (paths made absolute)."""
    if document is None:
        return Config(_Records(), _Records(), {}, "", [path])
    top = _Fields(document, "kubeconfig %s" % path)
    _check_kind(top, path)
    _check_unread_fields(top)
    folder = os.path.dirname(os.path.abspath(path))
    clusters, auth_infos = _Records(), _Records()
    for name, body in _named_entries(top, "clusters", path):
        clusters.add(name, _cluster, body, path, folder, _plain(body, _CLUSTER_STRINGS, _CLUSTER_DATA))
    for name, body in _named_entries(top, "users", path):
        auth_infos.add(name, _auth_info, body, path, folder, _plain(body, _USER_STRINGS, _USER_DATA))
    contexts = {name: Context(name, body.string("cluster") or "", body.string("user") or "",
                              body.string("namespace"), path)
                for name, body in _named_entries(top, "contexts", path)}
    return Config(clusters, auth_infos, contexts, top.string("current-context") or "", [path])


# Only the selected context's cluster and user need records; every entry is still checked as kubectl
# decodes the whole file. An entry whose every field is a plain string (or boolean), and whose *-data
# fields are valid base64, cannot fail in _cluster/_user: its record is built when first asked for.
# Anything else (exec, extensions, a wrong type, bad base64, a key not listed) is built at once, so its
# error comes in file order, as before. Keep these lists to fields _cluster/_user cannot refuse.
_CLUSTER_STRINGS = {"server": str, "certificate-authority": str, "tls-server-name": str, "proxy-url": str,
                    "insecure-skip-tls-verify": bool}
_CLUSTER_DATA = ("certificate-authority-data",)
_USER_STRINGS = {"token": str, "tokenFile": str, "username": str, "password": str, "client-certificate": str,
                 "client-key": str, "as": str, "as-uid": str}
_USER_DATA = ("client-certificate-data", "client-key-data")


def _plain(body, strings, data):
    """True when building ``body``'s record cannot raise (see above)."""
    for key, value in body.body.items():
        if value is None:
            continue
        expected = strings.get(key)
        if expected is not None:
            if type(value) is not expected:
                return False
        elif key in data:
            if type(value) is not str or "-----BEGIN" in value:
                return False
            try:
                base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
            except (binascii.Error, ValueError):
                return False
        else:
            return False
    return True


class _Waiting(tuple):
    """(build, body, path, folder) of a record not built yet."""


class _Records(Mapping):
    """name -> Cluster or AuthInfo record, in file order, built on first access (entries whose building cannot
    fail wait); the first entry under a name wins, as kubeconfig merging wants."""

    def __init__(self):
        self._entries = {}

    def add(self, name, build, body, path, folder, defer):
        if name not in self._entries:
            self._entries[name] = _Waiting((build, body, path, folder)) if defer else build(name, body, path, folder)

    def merge(self, other):
        for name, entry in other._entries.items():
            self._entries.setdefault(name, entry)

    def __getitem__(self, name):
        entry = self._entries[name]
        if type(entry) is _Waiting:
            build, body, path, folder = entry
            entry = self._entries[name] = build(name, body, path, folder)
        return entry

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def __repr__(self):
        return repr(dict(self))


def _check_kind(top, path):
    """``apiVersion`` v1 and ``kind`` Config, when given (clientcmd's scheme knows nothing else)."""
    version, kind = top.string("apiVersion"), top.string("kind")
    if version not in (None, "", "v1") or kind not in (None, "", "Config"):
        raise ConfigError("kubeconfig %s is not a kubeconfig: it has apiVersion %r and kind %r "
                          "(expected v1 and Config)" % (path, version or "", kind or ""))


def _check_unread_fields(top):
    """Type-check the fields kubectl decodes but the plugin never uses, in every entry.

    kubectl refuses a file whose ``preferences.colors`` or a cluster's ``disable-compression``
    is not a boolean, or whose ``extensions`` (top level, preferences, clusters, users,
    contexts) are not a list of entries with a string ``name`` (clientcmd/api/v1 types.go),
    or repeat a name (conversion.go); so does the plugin, naming the field.
    """
    preferences = top.mapping("preferences")
    preferences.boolean("colors")
    _check_extensions(preferences)
    _check_extensions(top)
    for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
        items = top.body.get(section)
        if not isinstance(items, list):
            continue  # reported by _named_entries
        for index, item in enumerate(items):
            body = _Fields(item, _Where("%s: %s[%d]", (top.what, section, index))).mapping(inner)
            if inner == "cluster":
                body.boolean("disable-compression")
            _check_extensions(body)


def _check_extensions(fields):
    items = fields.body.get("extensions")
    if items is None:
        return
    if not isinstance(items, list):
        fields.fail("extensions", "a list", items)
    seen = set()
    for index, item in enumerate(items):
        entry = _Fields(item, _Where("extensions[%d]", (index,)), fields)
        name = entry.string("name") or ""
        if name in seen:  # the v1 conversion's "duplicate name ... in list", as for entries
            raise ConfigError('%s: duplicate name "%s" in extensions' % (fields.what, name))
        if entry.body.get("extension") is not None:  # kubectl records a name only with its extension
            seen.add(name)


def _cluster(name, body, path, folder):
    return Cluster(
        name=name, server=body.string("server") or "",
        certificate_authority=body.path("certificate-authority", folder),
        certificate_authority_data=body.data("certificate-authority-data"),
        insecure_skip_tls_verify=body.boolean("insecure-skip-tls-verify"),
        tls_server_name=body.string("tls-server-name"),
        proxy_url=body.string("proxy-url"),
        extensions=_extensions(body), location_of_origin=path)


def _extensions(body):
    """An entry's ``extensions`` list as {name: JSON value}, or None when it has none. As kubectl's v1
    conversion records them, a name counts only with its ``extension`` (a null one is skipped), and
    :func:`_check_extensions` has refused a name given twice with one."""
    items = body.body.get("extensions")
    if items is None:
        return None
    if not isinstance(items, list):
        body.fail("extensions", "a list", items)
    extensions = {}
    for index, item in enumerate(items):
        entry = _Fields(item, _Where("extensions[%d]", (index,)), body)
        value = entry.body.get("extension")
        if value is not None:
            extensions.setdefault(entry.string("name") or "", value)
    return extensions


def _auth_info(name, body, path, folder):
    extra = body.mapping("as-user-extra")
    return AuthInfo(
        name=name, token=body.string("token"),
        token_file=body.path("tokenFile", folder),
        username=body.string("username"), password=body.string("password"),
        client_certificate=body.path("client-certificate", folder),
        client_certificate_data=body.data("client-certificate-data"),
        client_key=body.path("client-key", folder),
        client_key_data=body.data("client-key-data"),
        exec=_exec(body, folder), auth_provider=_auth_provider(body),
        impersonate=body.string("as"), impersonate_uid=body.string("as-uid"),
        impersonate_groups=body.strings("as-groups"),
        impersonate_extra=tuple((key, extra.strings(key)) for key in extra.body),
        location_of_origin=path)


def _exec(body, folder):
    if body.body.get("exec") is None:
        return None
    spec = body.mapping("exec")
    command = spec.string("command") or ""
    if "/" in command:  # cleaned as client-go cleans it, absolute too: the program run is the one checked
        command = kuberc.go_clean(os.path.join(folder, command))  # ({bin}/link/../x is {bin}/x, not link's)
    env = []
    entries = spec.body.get("env")
    if entries is not None and not isinstance(entries, list):
        spec.fail("env", "a list", entries)
    for index, item in enumerate(entries or ()):
        variable = _Fields(item, _Where("env[%d]", (index,)), spec)
        env.append((variable.string("name") or "", variable.string("value") or ""))
    return ExecConfig(command=command, args=spec.strings("args"), env=tuple(env),
                      api_version=spec.string("apiVersion") or "", install_hint=spec.string("installHint") or "",
                      provide_cluster_info=spec.boolean("provideClusterInfo"),
                      interactive_mode=_interactive_mode(spec))


def _interactive_mode(spec):
    """interactiveMode, defaulted to IfAvailable for v1beta1 (clientcmd/api/v1/defaults.go)."""
    mode = spec.string("interactiveMode") or ""
    if not mode and spec.string("apiVersion") in ("client.authentication.k8s.io/v1beta1",
                                                  "client.authentication.k8s.io/v1alpha1"):
        mode = "IfAvailable"
    return mode


def _auth_provider(body):
    if body.body.get("auth-provider") is None:
        return None
    spec = body.mapping("auth-provider")
    config = spec.mapping("config")
    return AuthProvider(spec.string("name") or "", {key: config.string(key) or "" for key in config.body})


# ---------------------------------------------------------------------------------------------
# Choosing the context


def select(config, context_name=None, environ=None, service_account_dir=None):
    """Choose the context (``--context``, else the current context) and return a :class:`Selection`.

    With no context chosen at all, the in-cluster configuration is used when it is
    possible (as kubectl does); otherwise, and wherever kubectl would silently fall back
    to ``http://localhost:8080`` or prompt for a password, this raises ConfigError naming
    what is missing: no kubeconfig, no current context, an unknown context, a context's
    undefined cluster or user. The chosen entries are then checked as clientcmd's
    ``validation.go`` checks them (see :mod:`kubectl_aicr.kube.validation`).
    """
    name = context_name or config.current_context
    if not name:
        selection = in_cluster(environ, service_account_dir)
        if selection is not None:
            return selection
        raise _no_context(config)
    context = config.contexts.get(name)
    if context is None:
        if context_name:
            raise ConfigError('context "%s" does not exist (kubeconfig: %s)' % (name, _files(config)))
        raise ConfigError("context was not found for specified context: %s (the current-context of %s)"
                          % (name, _files(config)))
    cluster = _context_cluster(config, context)
    user = None
    if context.auth_info:
        user = config.auth_infos.get(context.auth_info)
        if user is None:
            raise ConfigError('context "%s" names user "%s", which is not defined in %s'
                              % (name, context.auth_info, _files(config)))
    selection = Selection(context, cluster, user)
    validation.check(selection)
    return selection


def _files(config):
    return ", ".join(config.files) if config.files else "no kubeconfig file found"


def _no_context(config):
    if not config.contexts and not config.clusters:
        return ConfigError("no configuration has been provided (read: %s) and this is not a pod with a service "
                           "account; use --kubeconfig or set KUBECONFIG" % _files(config))
    return ConfigError("no context chosen: the kubeconfig sets no current-context; use --context NAME "
                       "(contexts: %s)" % (", ".join(sorted(config.contexts)) or "none"))


def _context_cluster(config, context):
    if not context.cluster:
        raise ConfigError('context "%s" names no cluster (kubectl would fall back to http://localhost:8080)'
                          % context.name)
    cluster = config.clusters.get(context.cluster)
    if cluster is None:
        raise ConfigError('context "%s" names cluster "%s", which is not defined in %s'
                          % (context.name, context.cluster, _files(config)))
    return cluster


def in_cluster(environ=None, service_account_dir=None):
    """The in-cluster :class:`Selection` (client-go ``rest.InClusterConfig``), or None when not possible.

    Possible when KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are set and the
    service account token is a file (``inClusterClientConfig.Possible``). The server is
    ``https://`` + host:port (an IPv6 host in brackets); the token is read from its file
    (trimmed, as client-go's file token source does); the CA is the service account's
    ca.crt when it exists, else the system's.
    """
    environ = os.environ if environ is None else environ
    folder = service_account_dir or SERVICE_ACCOUNT_DIR
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    token_file = os.path.join(folder, "token")
    if not host or not port or not os.path.isfile(token_file):
        return None
    ca_file = os.path.join(folder, "ca.crt")
    server = "https://%s:%s" % ("[%s]" % host if ":" in host else host, port)
    cluster = Cluster(name="in-cluster", server=server,
                      certificate_authority=ca_file if os.path.isfile(ca_file) else None,
                      location_of_origin="in-cluster")
    user = AuthInfo(name="in-cluster", token_file=token_file, location_of_origin="in-cluster")
    return Selection(Context("in-cluster", cluster.name, user.name, location_of_origin="in-cluster"), cluster, user)
