"""The user's kuberc: the credential plugin policy kubectl 1.37 reads from it, read as kubectl reads it.

Only ``credentialPluginPolicy`` and ``credentialPluginAllowlist`` are read (the user's defence against a
kubeconfig whose ``exec`` runs an arbitrary command). kuberc's other settings, ``defaults`` and ``aliases``,
change kubectl's own commands, which kubectl never applies to a plugin. The file is read only when an
exec plugin is about to run, once per command; :func:`kubectl_aicr.kube.exec_credential.check_policy`
then decides. Every rule below is kubectl's (``k8s.io/kubectl`` ``pkg/kuberc/kuberc.go`` ``LoadKuberc``,
``DefaultGetPreferences``, ``Preferences.Apply``; ``pkg/kuberc/marshal.go`` ``decodePreference``;
``pkg/config`` and its ``v1beta1``/``v1alpha1`` types and conversion; ``pkg/cmd/util`` ``FeatureGate``;
client-go ``plugin/pkg/client/auth/exec/exec.go`` ``ValidatePluginPolicy``; apimachinery
``pkg/util/yaml`` ``YAMLReader`` and the JSON serializer), checked against the real kubectl by
``tests/test_kuberc.py``:

- Off: ``KUBECTL_KUBERC=false`` (any case) or ``KUBERC=off``: no policy (every plugin may run).
- The file: ``$KUBERC`` when set (an explicit file), else ``$HOME/.kube/kuberc``. kubectl's
  ``--kuberc`` flag is kubectl's own: typed after ``kubectl aicr`` it reaches the plugin as an
  argument (which refuses it as an unknown flag); typed before it, kubectl refuses the command line.
- Reading: a missing default file is no policy; an explicit file that is missing, unreadable or holds no
  valid Preference is an error (kubectl's words); a default file that cannot be read or holds no valid
  Preference is ignored, as kubectl ignores it (kubectl, which starts the plugin, has warned then;
  this layer writes nothing to the terminal, so the plugin run on its own does not warn).
- Documents: the file is split at lines that start with ``---`` (anything but a comment after it ends
  the reading: kubectl's ``invalid Yaml document separator``); the first document whose ``apiVersion``
  is ``kubectl.config.k8s.io/v1beta1``, ``v1alpha1`` (which has no policy) or ``__internal`` and whose
  kind is ``Preference`` (both keys matched without regard to case, as Go's encoding/json finds them),
  and in which every known field has its type, is the one used; field names are matched exactly (a
  misspelt one is ignored, as kubectl ignores it after a warning). In v1beta1 an allowlist entry's
  deprecated ``name`` stands for ``command``; both, different, make the document invalid.
- The policy is then validated as client-go validates it (``Allowlist`` needs a non-empty list of
  entries whose command is a clean path; the other policies refuse any list, even an empty one;
  an unknown policy is refused), with client-go's messages.

Where this differs from kubectl, it refuses (no exec plugin runs) where kubectl might run one: a
document this project's YAML reader refuses (a repeated key, which kubectl reads as its last value;
broken YAML, which kubectl skips; more than ``MAX_KUBERC_BYTES``), a file that is not UTF-8, and a
pipe in place of the file (kubectl would wait for a writer). A document that starts with ``{`` but is a
YAML flow mapping, not JSON (unquoted keys), kubectl fails to decode as JSON and passes over; it is read
here as the YAML it is, and its policy applies.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import os
import posixpath
import stat

from ..errors import ConfigError, YAMLError
from ..records import Record

MAX_KUBERC_BYTES = 16 * 1024 * 1024
GROUP = "kubectl.config.k8s.io"
ALLOW_ALL, DENY_ALL, ALLOWLIST = "AllowAll", "DenyAll", "Allowlist"


class PluginPolicy(Record):
    """kuberc's credential plugin policy, converted as kubectl converts it (client-go ``api.PluginPolicy``).

    ``policy_type``: ``""`` (AllowAll), ``AllowAll``, ``DenyAll``, ``Allowlist``, or what the file said;
    ``allowlist``: the entries' commands, or None when the file gave no list (Go's nil; ``()`` is a
    list given empty); ``source``: the kuberc file it came from ("" for none).
    """

    policy_type: str = ""
    allowlist: Optional[Tuple[str, ...]] = None
    source: str = ""


NO_POLICY = PluginPolicy()


def kuberc_path(environ=None):
    """``(path, explicit)`` of the kuberc kubectl reads, or ``(None, False)`` when kuberc is off."""
    environ = os.environ if environ is None else environ
    if environ.get("KUBECTL_KUBERC", "").lower() == "false" or environ.get("KUBERC") == "off":
        return None, False
    if environ.get("KUBERC"):
        return environ["KUBERC"], True
    return go_join(environ.get("HOME", ""), ".kube", "kuberc"), False  # client-go homedir.HomeDir: $HOME


def load(environ=None):
    """The :class:`PluginPolicy` of the user's kuberc (:data:`NO_POLICY` when there is none to apply).

    Raises ConfigError: for an explicit file that cannot be read or holds no valid Preference, for a
    policy client-go refuses, and where this reader cannot read the file as kubectl does.
    """
    path, explicit = kuberc_path(environ)
    if path is None:
        return NO_POLICY
    data = _read(path, explicit)
    if data is None:
        return NO_POLICY
    try:
        policy = _decode(data, path)
    except _Unusable as problem:
        if explicit:
            raise ConfigError("kuberc: %s" % problem) from None
        return NO_POLICY  # kubectl: "kuberc: no preferences loaded from PATH: ...", a warning only
    if policy is None:
        return NO_POLICY
    problem = validate(policy)
    if problem:
        raise ConfigError("kuberc %s: %s" % (path, problem))  # kubectl: "error occurred while applying preferences ..."
    return policy


class _Unusable(Exception):
    """kubectl found no usable Preference (its decodePreference error): an error for an explicit file,
    else the file is ignored."""


def _read(path, explicit):
    """The file's bytes; None for a missing default file; _Unusable as Go's os.ReadFile fails."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if explicit:
            raise ConfigError("kuberc: open %s: no such file or directory" % path) from None
        return None
    except OSError as exc:
        return _unreadable(explicit, "open %s: %s" % (path, _go_errno(exc)))
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):  # kubectl would wait for a writer: refused here
        raise ConfigError("kuberc %s is a pipe or socket, not a file; kubectl-aicr runs no exec plugin "
                          "without reading it" % path)
    if stat.S_ISDIR(mode):
        return _unreadable(explicit, "read %s: is a directory" % path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_KUBERC_BYTES + 1)
    except OSError as exc:
        return _unreadable(explicit, "open %s: %s" % (path, _go_errno(exc)))
    if len(data) > MAX_KUBERC_BYTES:
        raise ConfigError("kuberc %s is larger than %d bytes; kubectl-aicr runs no exec plugin without reading "
                          "it" % (path, MAX_KUBERC_BYTES))
    return data


def _unreadable(explicit, problem):
    if explicit:
        raise ConfigError("kuberc: %s" % problem)
    return None  # kubectl warns "kuberc: no preferences loaded from ..." and goes on without a policy


def _go_errno(exc):
    """An OSError's text as Go's syscall.Errno writes it ("permission denied")."""
    reason = exc.strerror or str(exc)
    return reason[:1].lower() + reason[1:]


# ---------------------------------------------------------------------------------------------
# Documents


def documents(data):
    """Yield ``(first_line, chunk)`` for each document of ``data`` (bytes) as apimachinery's YAMLReader
    splits it: at each line starting with ``---`` followed only by spaces or a comment (a separator
    before any content stays in the next chunk, as there); _Unusable at a ``---`` line followed by
    anything else. Lines end at ``\\n`` (a ``\\r`` before it is dropped, as bufio.ReadLine drops it)."""
    pieces = data.split(b"\n")
    last = pieces.pop()
    lines = [piece[:-1] if piece.endswith(b"\r") else piece for piece in pieces]
    if last:
        lines.append(last)
    buffer, start = [], 1
    for number, line in enumerate(lines, 1):
        if line.startswith(b"---"):
            rest = _go_trim_space(line[3:])
            if rest and not rest.startswith(b"#"):
                raise _Unusable("invalid Yaml document separator: %s" % rest.decode("utf-8", "replace"))
            if buffer:
                yield start, b"".join(buffer)
                buffer, start = [], number + 1
                continue
        if not buffer:
            start = number
        buffer.append(line + b"\n")
    if buffer:
        yield start, b"".join(buffer)


def _go_trim_space(data):
    """Go's bytes.TrimSpace: ASCII and Unicode white space off both ends."""
    try:
        return data.decode("utf-8").strip().encode("utf-8")
    except UnicodeDecodeError:
        return data.strip(b" \t\n\v\f\r")


def _decode(data, path):
    """The PluginPolicy of the first usable document of ``data``; None for a file with no document;
    _Unusable when no document is usable (kubectl: "no valid preferences found"); ConfigError for a
    document this reader cannot read as kubectl does."""
    attempted = 0
    for first_line, chunk in documents(data):
        if not chunk.strip():
            continue  # bytes.TrimSpace(doc) is empty: not a document
        attempted += 1
        json_text = chunk.lstrip(b" \t\r\n").startswith(b"{")  # apimachinery's IsJSONBuffer: read as JSON
        policy = _preference(_yaml(chunk, path, first_line), path, json_text)
        if policy is not None:
            return policy
    if attempted:
        raise _Unusable("no valid preferences found in %s" % path)
    return None


def _yaml(chunk, path, first_line):
    """The value of a chunk's first YAML document, read as kubectl (go-yaml v2, then JSON) reads it."""
    from .yaml import reader  # the full reader, loaded only for a user with a kuberc and an exec plugin

    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + chunk.count(b"\n", 0, exc.start)
        raise ConfigError("kuberc %s:%d: not UTF-8 text; kubectl-aicr runs no exec plugin while it cannot read "
                          "the credential plugin policy as kubectl does" % (path, line)) from None
    try:
        return reader.load_first(text, path, reader.GO_YAML)
    except YAMLError as exc:
        raise ConfigError("kuberc %s:%d:%d: %s; kubectl-aicr runs no exec plugin while it cannot read the "
                          "credential plugin policy as kubectl does" % (path, first_line + exc.line - 1,
                                                                        exc.column, exc.problem)) from None


# The fields of each Preference version, as its JSON decoding types them: a field name -> "s" (string),
# "ls" (list of strings), a dict (an object's fields) or a 1-list holding one (a list of objects).
# A value of the wrong type makes the whole document unusable, as Go's decoder fails on it.
_OPTIONS = [{"name": "s", "default": "s"}]
_SCHEMAS = {
    "v1beta1": {"apiVersion": "s", "kind": "s", "defaults": [{"command": "s", "options": _OPTIONS}],
                "aliases": [{"name": "s", "command": "s", "prependArgs": "ls", "appendArgs": "ls",
                             "options": _OPTIONS}],
                "credentialPluginPolicy": "s", "credentialPluginAllowlist": [{"name": "s", "command": "s"}]},
    "v1alpha1": {"apiVersion": "s", "kind": "s", "overrides": [{"command": "s", "flags": _OPTIONS}],
                 "aliases": [{"name": "s", "command": "s", "prependArgs": "ls", "appendArgs": "ls",
                              "flags": _OPTIONS}]},
    "__internal": {"apiVersion": "s", "kind": "s",
                   "Defaults": [{"Command": "s", "Options": [{"Name": "s", "Default": "s"}]}],
                   "Aliases": [{"Name": "s", "Command": "s", "PrependArgs": "ls", "AppendArgs": "ls",
                                "Options": [{"Name": "s", "Default": "s"}]}],
                   "CredentialPluginPolicy": "s", "CredentialPluginAllowlist": [{"Command": "s"}]},
}
_POLICY_FIELDS = {"v1beta1": ("credentialPluginPolicy", "credentialPluginAllowlist"),
                  "__internal": ("CredentialPluginPolicy", "CredentialPluginAllowlist")}


def _preference(document, path, json_text=False):
    """The PluginPolicy of one decoded document, or None when kubectl would pass it over. ``json_text``:
    the document was written as JSON (kubectl reads its keys in the order written)."""
    version = _preference_version(document, json_text)
    if version is None or not _typed(document, _SCHEMAS[version]):
        return None
    if version not in _POLICY_FIELDS:
        return PluginPolicy(source=path)  # v1alpha1 has no policy: kubectl drops the field with a warning
    policy_key, list_key = _POLICY_FIELDS[version]
    entries = document.get(list_key)
    allowlist = None
    if entries is not None:
        allowlist = []
        for entry in entries:
            command = _entry_command(entry or {}, version)
            if command is None:
                return None  # the conversion error: both name and command, different
            allowlist.append(command)
        allowlist = tuple(allowlist)
    return PluginPolicy(document.get(policy_key) or "", allowlist, path)


def _preference_version(document, json_text=False):
    """The version of a ``kubectl.config.k8s.io`` Preference document, or None for anything else
    (the JSON serializer's ``SimpleMetaFactory.Interpret``, then the scheme's lookup).

    A YAML document kubectl reads as the JSON that sigs.k8s.io/yaml makes of it, whose object keys are
    sorted (Go's json.Marshal of a map: byte order, which is code point order), so its keys are read in
    that order, not in the order written: of ``kind: Preference`` and ``KIND: Other`` kubectl keeps
    ``Preference``. A document written as JSON (``json_text``) is read as it is, its keys in the order written."""
    if not isinstance(document, dict):
        return None
    found = {"apiversion": "", "kind": ""}
    items = [(key, value) for key, value in document.items() if isinstance(key, str)]
    for key, value in (items if json_text else sorted(items, key=lambda item: item[0])):
        folded = key.casefold()
        if folded in found:  # encoding/json: a key matches a field without regard to case; the last wins
            if value is None:
                continue
            if not isinstance(value, str):
                return None
            found[folded] = value
    group, slash, version = found["apiversion"].rpartition("/")
    if found["kind"] != "Preference" or group != GROUP or "/" in group or version not in _SCHEMAS:
        return None
    return version


def _typed(value, schema):
    """Whether ``value`` decodes into ``schema`` without a type error (null decodes into anything)."""
    if value is None:
        return True
    if schema == "s":
        return isinstance(value, str)
    if schema == "ls":
        return isinstance(value, list) and all(item is None or isinstance(item, str) for item in value)
    if isinstance(schema, list):
        return isinstance(value, list) and all(_typed(item, schema[0]) for item in value)
    return isinstance(value, dict) and all(_typed(item, schema[key]) for key, item in value.items()
                                           if key in schema)


def _entry_command(entry, version):
    """An allowlist entry's command after conversion (v1beta1: the deprecated ``name`` stands for it);
    None for a v1beta1 entry whose name and command are both set and differ."""
    if version == "__internal":
        return entry.get("Command") or ""
    name, command = entry.get("name") or "", entry.get("command") or ""
    if name and command and name != command:
        return None
    return command or name


# ---------------------------------------------------------------------------------------------
# Validation (client-go exec.go ValidatePluginPolicy, validateAllowlist)


def validate(policy):
    """client-go's problem with ``policy`` (its words), or None."""
    kind, entries = policy.policy_type, policy.allowlist
    if kind in ("", ALLOW_ALL, DENY_ALL):
        if entries is not None:
            return ("misconfigured credential plugin allowlist: plugin policy is %s but allowlist is non-nil"
                    % go_quote(kind))
        return None
    if kind != ALLOWLIST:
        return "unknown plugin policy: %s" % go_quote(kind)
    if entries is None:
        return 'credential plugin policy set to "Allowlist", but allowlist is unspecified'
    if not entries:
        return 'credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead'
    for number, command in enumerate(entries, 1):
        if not command:
            return "misconfigured credential plugin allowlist: empty allowlist entry #%d" % number
        if go_clean(command) != command:
            return "non-normalized file path: %s vs %s" % (go_quote(command), go_quote(go_clean(command)))
    return None


# ---------------------------------------------------------------------------------------------
# Go's path and quoting rules, where client-go's decisions and messages depend on them


def go_clean(path):
    """Go's path/filepath.Clean on a Unix path ("" -> ".", "//a" -> "/a")."""
    if not path:
        return "."
    cleaned = posixpath.normpath(path)
    return cleaned[1:] if cleaned.startswith("//") else cleaned  # POSIX keeps two leading slashes; Go not


def go_join(*parts):
    """Go's path/filepath.Join: the non-empty parts joined by "/", cleaned ("" when all are empty)."""
    kept = [part for part in parts if part]
    return go_clean("/".join(kept)) if kept else ""


def go_base(path):
    """Go's path/filepath.Base: the last element ("" -> ".", "/" -> "/")."""
    if not path:
        return "."
    stripped = path.rstrip("/")
    return stripped.rsplit("/", 1)[-1] if stripped else "/"


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
               "\\": "\\\\", '"': '\\"'}


def go_quote(text):
    """Go's strconv.Quote (``%q``): printable characters as they are, the rest escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        elif code < 0x10000:
            out.append("\\u%04x" % (0xFFFD if 0xD800 <= code < 0xE000 else code))
        else:
            out.append("\\U%08x" % code)
    return '"%s"' % "".join(out)

