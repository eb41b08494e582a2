"""Exec credential plugins (``client.authentication.k8s.io/v1`` and ``v1beta1``), as kubectl runs them.

Behaviour and messages follow client-go ``plugin/pkg/client/auth/exec/exec.go``
(``refreshCredsLocked``, ``isInteractive``, ``wrapCmdRunErrorLocked``) and
``tools/clientcmd/client_config.go`` (``cleanANSIEscapeCodes`` for the installHint),
with the cluster information of ``rest/exec.go`` ``ConfigToExecCluster``:

- The command runs with the plugin's environment plus the config's ``env`` and
  ``KUBERNETES_EXEC_INFO`` (an ExecCredential whose spec says ``interactive`` and,
  with ``provideClusterInfo``, the cluster). A command without a slash is looked up
  on this process's PATH as Go's ``os/exec.LookPath`` does (:func:`look_path`; a program
  found through a relative PATH entry is refused, Go's ErrDot).
- Before it runs, the user's kuberc credential plugin policy decides whether it may
  (:func:`check_policy`, client-go's ``updateCommandAndCheckAllowlistLocked``; the policy is read
  by :mod:`kubectl_aicr.kube.kuberc`): DenyAll refuses every plugin, Allowlist only the
  commands it lists, compared as client-go compares them, with client-go's messages.
- interactiveMode Never: not interactive; IfAvailable: interactive when standard
  input is a terminal; Always: an error unless it is one. Standard input is given to
  the plugin only when interactive; its standard error is the user's.
- The plugin's output is untrusted: it is read up to ``MAX_OUTPUT_BYTES``, checked
  field by field, and never quoted in a message (it holds the credential). It is an
  ExecCredential in JSON (when it starts with ``{``) or else YAML, its first document
  read as go-yaml v2 reads it (``token: yes`` is a boolean, so refused), as client-go's
  universal deserializer decodes it. Unlike kubectl, which keeps the last value, an object
  that repeats a key (in JSON as in YAML) is refused, naming the key's path, never a value.
- The run is bound by the command's deadline. As client-go waits (``cmd.Run`` copies stdout
  to a buffer until end of file), the plugin is done when it has exited and every process
  holding its stdout has closed it: a background process it started that keeps stdout open
  keeps the run going, as in kubectl, but at the deadline the plugin and its process group
  are killed and the error comes then.
"""

from __future__ import annotations  # the records' annotations stay strings: no typing import at start-up

import base64
import json
import os
import re
import selectors
import signal
import stat
import subprocess
import sys
import time
import unicodedata

from . import kuberc
from .. import helpers
from ..errors import AuthError, TransportError, YAMLError
from ..records import Record

MAX_OUTPUT_BYTES = 1024 * 1024
INSTALL_HINT_HELP = ("It looks like you are trying to use a client-go credential plugin that is not installed. "
                     "To learn more about this feature, consult the documentation available at: "
                     "https://kubernetes.io/docs/reference/access-authn-authz/authentication/"
                     "#client-go-credential-plugins")


class ExecResult(Record):
    """What a plugin returned: a token and/or a PEM certificate and key, and when they expire (epoch seconds)."""

    _secret = ("token", "key_pem")

    token: str = ""
    cert_pem: bytes = b""
    key_pem: bytes = b""
    expires: Optional[float] = None


def clean_ansi_escape_codes(text):
    """client-go's ``cleanANSIEscapeCodes``: keep letters, marks, numbers, punctuation, symbols,
    separators and \\t-\\r; every other character (ESC included) becomes ``U+XXXX``."""
    out = []
    for char in text:
        if "\t" <= char <= "\r" or unicodedata.category(char)[0] in "LMNPSZ":
            out.append(char)
        else:
            out.append("U+%04X" % ord(char))
    return "".join(out)


def _one_line(text):
    return " ".join(text.split())


def is_interactive(mode, stdin=None):
    """Whether the plugin runs interactively under ``mode``; AuthError for Always without a terminal."""
    stdin = sys.stdin if stdin is None else stdin
    try:
        terminal = stdin is not None and stdin.isatty()
    except (ValueError, OSError):
        terminal = False
    if mode == "Never":
        return False
    if mode == "IfAvailable":
        return terminal
    if mode == "Always":
        if not terminal:
            raise AuthError("getting credentials: exec plugin cannot support interactive mode: "
                            "standard input is not a terminal")
        return True
    raise AuthError('getting credentials: exec plugin cannot support interactive mode: unknown interactiveMode: "%s"'
                    % mode)


def exec_info(spec, cluster, interactive):
    """The KUBERNETES_EXEC_INFO value: an ExecCredential of the plugin's apiVersion, as kubectl encodes it."""
    body = {}
    if spec.provide_cluster_info:
        info = {"server": cluster.server}
        if cluster.tls_server_name:
            info["tls-server-name"] = cluster.tls_server_name
        if cluster.insecure_skip_tls_verify:
            info["insecure-skip-tls-verify"] = True
        ca = _ca_bytes(cluster)
        if ca:
            info["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
        if cluster.proxy_url:
            info["proxy-url"] = cluster.proxy_url
        info["config"] = cluster.exec_extension()
        body["cluster"] = info
    body["interactive"] = interactive
    return json.dumps({"kind": "ExecCredential", "apiVersion": spec.api_version, "spec": body},
                      separators=(",", ":"))


def _ca_bytes(cluster):
    if cluster.certificate_authority_data:
        return cluster.certificate_authority_data
    if cluster.certificate_authority:
        try:
            with open(cluster.certificate_authority, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise AuthError("failed to load CA bundle for execProvider: %s" % (exc.strerror or exc)) from None
        except ValueError:  # a NUL in the path: Go's open fails with EINVAL
            raise AuthError("failed to load CA bundle for execProvider: invalid argument") from None
    return None


def _environment(spec, info, environ):
    """The plugin's environment: this process's, then the config's ``env`` (the last of a name wins, as Go's
    dedupEnv keeps it), then KUBERNETES_EXEC_INFO. Go passes a config name holding ``=`` on as ``NAME=VALUE``
    text, which the plugin reads as the variable before the first ``=``: the same bytes are passed here
    (subprocess refuses a name holding ``=``, so the text is cut at its first ``=`` first); a name that
    starts with ``=`` cannot be passed at all, and is refused."""
    env = dict(os.environ if environ is None else environ)
    for name, value in spec.env:
        if name.startswith("="):  # Go passes "=A=x"; Python's subprocess cannot pass an empty name
            raise AuthError("getting credentials: the exec plugin's env variable %s starts with '=', which "
                            "kubectl-aicr cannot pass to a program" % kuberc.go_quote(name))
        name, _, value = ("%s=%s" % (name, value)).partition("=")  # Go's envp text, cut at its first "=": A="B=x"
        env[name] = value
    env["KUBERNETES_EXEC_INFO"] = info
    return env


def _resolve(spec, environ):
    """The program to run: the command itself when it has a slash, else its PATH entry (this process's PATH,
    :func:`look_path`); None when there is none (or only one found through a relative PATH entry)."""
    if "/" in spec.command:
        return spec.command if os.path.exists(spec.command) else None
    found, problem = look_path(spec.command, _path_value(environ))
    return found if problem is None else None


def _path_value(environ):
    return (os.environ if environ is None else environ).get("PATH", "")  # Go: an unset PATH finds nothing


def look_path(name, path_value):
    """Go's ``os/exec.LookPath`` on Unix: ``(path, None)``, or ``(path_or_empty, problem)`` with Go's error text.

    A name with a slash is itself, if it is an executable file. Else each entry of ``path_value`` (a
    PATH value; an empty entry is ".") is tried in order, the first executable file wins; found
    through a relative entry it is returned with Go's ErrDot problem, never silently run.
    """
    if "/" in name:
        problem = _find_executable(name)
        return (name, None) if problem is None else ("", "exec: %s: %s" % (kuberc.go_quote(name), problem))
    for folder in path_value.split(os.pathsep) if path_value else ():
        candidate = kuberc.go_join(folder or ".", name)
        if _find_executable(candidate) is None:
            if not candidate.startswith("/"):
                return candidate, ("exec: %s: cannot run executable found relative to current directory"
                                   % kuberc.go_quote(name))
            return candidate, None
    return "", "exec: %s: executable file not found in $PATH" % kuberc.go_quote(name)


def _find_executable(path):
    """None when ``path`` is an executable file (Go's ``findExecutable``: not a folder, executable for the
    effective user), else Go's problem text."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return "stat %s: %s" % (path, reason[:1].lower() + reason[1:])
    except ValueError:  # a NUL in the path (Python's "embedded null byte"): Go's stat fails with EINVAL
        return "stat %s: invalid argument" % path
    if stat.S_ISDIR(mode):
        return "is a directory"
    if os.access(path, os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        return None
    return "permission denied"


def check_policy(policy, command, environ=None):
    """AuthError unless the kuberc ``policy`` (a kuberc.PluginPolicy) lets the exec plugin ``command`` run.

    client-go ``exec.go``: ``""``/AllowAll let every plugin run, DenyAll none; Allowlist lets it run when
    the command (cleaned, as client-go cleans it) or the path it resolves to is an entry as written, or
    is the path an entry of the same base name resolves to (each by :func:`look_path` on this process's
    PATH); a command that cannot be resolved is refused unless listed as written. The messages are
    client-go's, with the kuberc file named.
    """
    cmd = kuberc.go_clean(command)
    kind = policy.policy_type
    if kind in ("", kuberc.ALLOW_ALL):
        return
    where = " (credentialPluginPolicy of kuberc %s)" % policy.source
    if kind == kuberc.DENY_ALL:
        raise AuthError("getting credentials: plugin %s not allowed: policy set to %s%s"
                        % (kuberc.go_quote(cmd), kuberc.go_quote(kind), where))
    if kind != kuberc.ALLOWLIST:
        raise AuthError("getting credentials: unknown plugin policy %s%s" % (kuberc.go_quote(kind), where))
    path_value = _path_value(environ)
    listed = {entry for entry in policy.allowlist or () if entry}
    cmd_path, problem = cmd, None
    if kuberc.go_base(cmd) == cmd:  # exec.Command looks a bare name up at once
        found, problem = look_path(cmd, path_value)
        cmd_path = found or cmd
    if cmd in listed or cmd_path in listed:
        return
    resolved = cmd_path
    if cmd_path == cmd:
        resolved, problem = look_path(cmd_path, path_value)
        cmd_path = resolved or cmd_path
    if problem is not None:
        raise AuthError("getting credentials: plugin path %s cannot be resolved for credential plugin allowlist "
                        "check: %s%s" % (kuberc.go_quote(cmd_path), problem, where))
    hint = kuberc.go_base(cmd_path)
    for entry in policy.allowlist or ():
        if kuberc.go_base(entry) == hint:
            found, trouble = look_path(entry, path_value)
            if trouble is None and found:
                listed.add(found)
    if resolved not in listed:
        raise AuthError("getting credentials: plugin path %s is not permitted by the credential plugin allowlist%s"
                        % (kuberc.go_quote(cmd_path), where))


def _not_found(spec):
    message = "getting credentials: exec: executable %s not found. %s" % (spec.command, INSTALL_HINT_HELP)
    if spec.install_hint:
        message += " " + _one_line(clean_ansi_escape_codes(spec.install_hint))
    return AuthError(message)


def run(spec, cluster, deadline, environ=None, stdin=None, policy=None):
    """Run the exec plugin ``spec`` (a kubeconfig.ExecConfig) for ``cluster`` within ``deadline``; an ExecResult.

    ``policy``: the kuberc.PluginPolicy that must let it run (None: kuberc.NO_POLICY). Raises AuthError
    with kubectl's words: refused by the policy, not found (with the installHint), a failing exit code,
    a wrong apiVersion, no status, no credential; TransportError when the deadline passes.
    """
    interactive = is_interactive(spec.interactive_mode, stdin)
    check_policy(policy or kuberc.NO_POLICY, spec.command, environ)  # as client-go: before anything runs
    program = _resolve(spec, environ)
    if program is None:
        raise _not_found(spec)
    env = _environment(spec, exec_info(spec, cluster, interactive), environ)
    output = _execute([program] + list(spec.args), env, interactive, spec, deadline)
    return parse_output(output, spec)


def _execute(argv, env, interactive, spec, deadline):
    """The plugin's stdout once it has closed it and exited, all within ``deadline``.

    A non-interactive plugin runs in its own session, so at the deadline (or when it writes too
    much, or this command is interrupted) the whole process group is killed: the plugin and
    whatever it started. An interactive plugin stays in this session so that it keeps the
    terminal it prompts on; at the deadline only it is killed. As client-go does (``cmd.Run``
    with a buffer: Go waits for the copy to reach end of file), a plugin is done when its
    stdout is closed by every process holding it and it has exited; a process it left holding
    stdout keeps it running, but never past the deadline. stdout is read from its raw file
    descriptor with a selector, so nothing here ever blocks beyond the deadline.
    """
    if any("\0" in name or "\0" in value for name, value in env.items()):
        raise AuthError("getting credentials: exec: exec: environment variable contains NUL")  # os/exec's words
    if any("\0" in word for word in argv):  # Go's fork/exec: EINVAL for a NUL in an argument
        raise AuthError("getting credentials: exec: fork/exec %s: invalid argument" % spec.command)
    try:
        process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=None, bufsize=0,
                                   stdin=None if interactive else subprocess.DEVNULL,
                                   start_new_session=not interactive)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise AuthError("getting credentials: exec: fork/exec %s: %s"
                        % (spec.command, reason[:1].lower() + reason[1:])) from None
    done = False
    try:
        output = _read_stdout(process, spec, deadline)
        try:
            process.wait(timeout=max(deadline.at - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            raise _past_deadline(spec, deadline, process) from None
        done = True
    finally:
        if not done:
            _kill(process, group=not interactive)
        process.stdout.close()  # a raw FileIO (bufsize=0): closes the descriptor, waits on nothing
    if process.returncode != 0:
        code = process.returncode if process.returncode > 0 else -1
        raise AuthError("getting credentials: exec: executable %s failed with exit code %d" % (spec.command, code))
    return output


def _read_stdout(process, spec, deadline):
    """Bytes from the plugin's stdout up to end of file; TransportError at the deadline, AuthError past
    MAX_OUTPUT_BYTES."""
    chunks, total = [], 0
    descriptor = process.stdout.fileno()
    with selectors.DefaultSelector() as selector:
        selector.register(descriptor, selectors.EVENT_READ)
        while True:
            left = deadline.at - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise _past_deadline(spec, deadline, process)
            chunk = os.read(descriptor, 65536)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > MAX_OUTPUT_BYTES:
                raise AuthError("getting credentials: exec plugin %s wrote more than %d bytes"
                                % (spec.command, MAX_OUTPUT_BYTES))
            chunks.append(chunk)


def _past_deadline(spec, deadline, process):
    message = "getting credentials: exec plugin %s did not finish within the %d-second deadline" % (
        spec.command, deadline.seconds)
    if process.poll() is not None:  # it exited; what it started still holds its stdout
        message += " (it exited, but a process it started still holds its standard output open)"
    return TransportError(message)


def _kill(process, group):
    """Kill the plugin (and with ``group``, its process group: what it started) and reap it."""
    if group:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the group outlives the plugin while a member lives
        except (ProcessLookupError, PermissionError):
            pass
    if process.poll() is None:
        process.kill()
    process.wait()


def parse_output(output, spec):
    """Check the plugin's stdout (an ExecCredential) and return an ExecResult; never quotes the output."""
    where = "getting credentials: exec plugin %s" % spec.command
    document = _decode(output, where)
    if document is None:
        document = {}  # empty output: client-go finds no apiVersion
    if not isinstance(document, dict):
        raise AuthError("%s: decoding stdout: its output is not an ExecCredential object (JSON or YAML)" % where)
    version, kind = document.get("apiVersion"), document.get("kind")
    if version != spec.api_version:
        shown = version if isinstance(version, str) and re.match(r"[a-z0-9.-]{1,63}/v[0-9a-z]{1,15}\Z", version) \
            else "(none, or not an API version)"
        raise AuthError("getting credentials: exec plugin is configured to use API version %s, plugin returned "
                        "version %s" % (spec.api_version, shown))
    if kind != "ExecCredential":
        raise AuthError("%s: decoding stdout: its output is not an ExecCredential" % where)
    status = document.get("status")
    if status is None:
        raise AuthError("getting credentials: exec plugin didn't return a status field")
    if not isinstance(status, dict):
        raise AuthError("%s: decoding stdout: status must be an object" % where)
    return _result(status, where)


def _decode(output, where):
    """The plugin's output as client-go decodes it: JSON if it starts with '{', else YAML's first document."""
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthError("%s: decoding stdout: its output is not UTF-8 text" % where) from None
    if text.lstrip().startswith("{"):
        try:
            # parse_int=float: no field read here is a number, so a number only has to stay one; int() would
            # refuse one of over 4,300 digits that Go's encoding/json skips in an unknown field.
            document = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_Mapping.of, parse_int=float)
        except (ValueError, RecursionError):
            raise AuthError("%s: decoding stdout: its output is not valid JSON" % where) from None
        repeated = _repeated_key(document)
        if repeated:  # client-go keeps the last value; a credential chosen that way is ambiguous
            raise AuthError("%s: decoding stdout: duplicate key %s" % (where, repeated))
        return document
    from .yaml import reader as yaml_reader  # loaded only for a plugin that answers in YAML

    try:
        return yaml_reader.load_first(text, "stdout", yaml_reader.GO_YAML)
    except YAMLError as exc:  # the position only: the problem may quote the credential
        raise AuthError("%s: decoding stdout: its output is not valid YAML (line %d, column %d)"
                        % (where, exc.line, exc.column)) from None


class _Mapping(dict):
    """A JSON object; ``repeated`` is the first key it holds twice (None if none)."""

    repeated = None

    @classmethod
    def of(cls, pairs):
        mapping = cls()
        for key, value in pairs:
            if key in mapping and mapping.repeated is None:
                mapping.repeated = key
            mapping[key] = value
        return mapping


def _repeated_key(value, path=""):
    """The dotted path (keys only, escaped, never a value) of the first repeated key in ``value``, or None."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _repeated_key(item, "%s[%d]" % (path, index))
            if found:
                return found
    elif isinstance(value, _Mapping):
        if value.repeated is not None:
            return _path(path, value.repeated)
        for key, item in value.items():
            found = _repeated_key(item, _path(path, key))
            if found:
                return found
    return None


def _path(path, key):
    shown = key if re.match(r"[A-Za-z0-9_-]{1,64}\Z", key) else json.dumps(key[:64])
    return shown if not path else path + "." + shown


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)  # NaN, Infinity: Go's encoding/json refuses them


def _result(status, where):
    values = {}
    for key in ("token", "clientCertificateData", "clientKeyData", "expirationTimestamp"):
        value = status.get(key)
        if value is not None and not isinstance(value, str):
            raise AuthError("%s: decoding stdout: status.%s must be a string" % (where, key))
        values[key] = _LONE_SURROGATE.sub("\ufffd", value or "")  # as Go's encoding/json decodes them
    if not (values["token"] or values["clientCertificateData"] or values["clientKeyData"]):
        raise AuthError("getting credentials: exec plugin didn't return a token or cert/key pair")
    if bool(values["clientCertificateData"]) != bool(values["clientKeyData"]):
        raise AuthError("getting credentials: exec plugin returned only certificate or key, not both")
    expires = None
    if values["expirationTimestamp"]:
        expires = parse_rfc3339(values["expirationTimestamp"])
        if expires is None:
            raise AuthError("%s: decoding stdout: status.expirationTimestamp is not an RFC 3339 time" % where)
    return ExecResult(values["token"], values["clientCertificateData"].encode("utf-8"),
                      values["clientKeyData"].encode("utf-8"), expires)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # json.loads keeps "\\ud800"; Go's decoder gives U+FFFD


def parse_rfc3339(text):
    """An RFC 3339 time -> epoch seconds (float), or None if it is not one (as Go's ``time.Parse``)."""
    moment = helpers.parse_rfc3339(text)
    return None if moment is None else moment.timestamp()
