"""A real kube-apiserver (with etcd) for kubectl-aicr's ``real`` test tier (test-only code).

The binaries come from ``make real-apiserver`` (``tests/real_apiserver/build.sh``), which builds them
from the Go module proxy and caches them in ``~/.cache/kubectl-aicr/real-apiserver/<version>/``
(the pins are in ``tests/real_apiserver/versions.env``). Which version: ``AICR_REAL_APISERVER_VERSION``
(one of ``KUBERNETES_VERSIONS``; default the newest); ``make test-real`` runs the tier once per version.

Use::

    with RealAPIServer() as server:          # starts etcd + kube-apiserver on 127.0.0.1
        server.url, server.ca_file, server.admin_kubeconfig, server.version
        server.write_kubeconfig(path, user="carol@example.com")            # token
        server.write_kubeconfig(path, user="alice@example.com", style="cert-files")
        server.load_objects(list_of_dicts)   # create or replace, then status
        code, body = server.request("GET", "/apis/...", user="mallory@example.com")

or the session-scoped pytest fixture ``real_apiserver`` (import it into a test module:
``from real_apiserver import real_apiserver``). It skips when the cached binaries are
absent, unless ``AICR_REQUIRE_REAL_APISERVER=1``, when it fails instead.

What is set up at start (all files in a temporary folder, removed at stop):

- a CA and certificates made by ``tests/support/certs.py`` (trustme): the serving certificate
  (127.0.0.1, ::1, localhost) and client certificates on demand (CN = user, O = groups);
- a static token for every user (``--token-auth-file``), ``--authorization-mode=RBAC``,
  a service-account RSA key pair (``--service-account-*``);
- the CRDs of ``tests/real_apiserver/crds.yaml`` (waited for until Established and
  served), the ``aicr-system`` namespace and ``tests/real_apiserver/rbac.yaml``;
- the operator's admission rules, ``tests/real_apiserver/admission-policies.yaml``
  (ValidatingAdmissionPolicies and bindings, CEL), each with one added matchCondition that
  exempts :data:`EXEMPT_USER`; waited for until a probe's bad update is denied;
- ``audit``: the audit webhook backend (tests/support/audit_sink.py), the server's own request log
  (``audit.requests``) and the hook that lands another client's write while a command's request waits
  (``audit.interpose``). It only sees events: SelfSubjectReview, RBAC, admission and storage are all
  the server's, and the plugin talks to the server directly.

Users (every one has a token; a client certificate is issued when a kubeconfig asks):
alice@example.com (aicr-approvers, certificate by default), bob@example.com (approver),
carol@example.com (aicr-readers), mallory@example.com (no rights), admin (system:masters),
approver-01 .. approver-20 (aicr-approvers, tokens), and aicr-rules-exempt-admin
(system:masters; the one user the admission policies do not judge, used only by
:meth:`RealAPIServer.apply_action` for what the rules forbid everyone else).

The server assigns ``metadata.uid`` and ``creationTimestamp`` itself (the fixtures' values are
dropped), and ``load_objects`` replaces an existing rollout by delete and create (a new uid).
See tests/real_apiserver/README.md.
"""

import atexit
import collections
import copy
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

try:  # imported as tests.support.real_apiserver
    from . import audit_sink, certs
except ImportError:  # imported as a top-level module (tests/support on sys.path)
    import audit_sink
    import certs

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = os.path.dirname(os.path.abspath(__file__))
ASSETS = os.path.join(os.path.dirname(HERE), "real_apiserver")  # tests/real_apiserver/
VERSIONS_FILE = os.path.join(ASSETS, "versions.env")
CRDS_FILE = os.path.join(ASSETS, "crds.yaml")
RBAC_FILE = os.path.join(ASSETS, "rbac.yaml")
POLICIES_FILE = os.path.join(ASSETS, "admission-policies.yaml")
MODULES = os.path.join(ASSETS, "modules")
VERSION_ENV = "AICR_REAL_APISERVER_VERSION"
#: The one identity the admission policies do not judge: the real tier's stand-in for a cluster administrator who
#: changes what the rules forbid everyone else (tests/support/interpositions.py, a new target digest in place), so
#: the plugin's own pins can be tested on the real server. No test acts as this user otherwise.
EXEMPT_USER = "aicr-rules-exempt-admin"
#: The User-Agent of the harness's own requests (left out of :attr:`RealAPIServer.requests`).
HARNESS_AGENT = "aicr-real-apiserver-harness"
REQUIRE_ENV = "AICR_REQUIRE_REAL_APISERVER"
OPERATOR_NAMESPACE = "aicr-system"
APPROVERS = "aicr-approvers"
READERS = "aicr-readers"
MASTERS = "system:masters"

User = collections.namedtuple("User", "name groups cert short")

USERS = (
    User("alice@example.com", (APPROVERS,), True, "alice"),
    User("bob@example.com", (APPROVERS,), False, "bob"),
    User("carol@example.com", (READERS,), False, "carol"),
    User("mallory@example.com", (), False, "mallory"),
    User("admin", (MASTERS,), True, "admin"),
    User(EXEMPT_USER, (MASTERS,), False, "rules-exempt-admin"),
) + tuple(User("approver-%02d" % i, (APPROVERS,), False, "approver-%02d" % i) for i in range(1, 21))

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
REQUEST_TIMEOUT = 30.0


class RealAPIServerError(Exception):
    """Start-up failed, a wait timed out, or a request to the server was refused."""


class APIStatusError(RealAPIServerError):
    """A request answered with an HTTP error; ``code`` and the decoded ``body`` (a Status)."""

    def __init__(self, method, path, code, body):
        self.method, self.path, self.code, self.body = method, path, code, body
        super().__init__("%s %s: HTTP %d: %s" % (method, path, code, json.dumps(body)))


# ---------------------------------------------------------------------------- binaries


def read_versions(path=VERSIONS_FILE):
    """The pins of ``versions.env`` as a dict (``KEY=VALUE`` lines)."""
    pins = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                key, _, value = line.partition("=")
                pins[key.strip()] = value.strip()
    return pins


def versions(pins=None):
    """The pinned kube-apiserver versions, oldest first (``KUBERNETES_VERSIONS``)."""
    return (pins or read_versions())["KUBERNETES_VERSIONS"].split()


def chosen_version(pins=None):
    """The version this run uses: ``AICR_REAL_APISERVER_VERSION`` (must be pinned), else the newest.
    Raises RealAPIServerError for a version that is not pinned."""
    pinned = versions(pins)
    wanted = os.environ.get(VERSION_ENV) or pinned[-1]
    if wanted not in pinned:
        raise RealAPIServerError("%s=%s is not one of KUBERNETES_VERSIONS in %s (%s)" % (
            VERSION_ENV, wanted, VERSIONS_FILE, " ".join(pinned)))
    return wanted


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("AICR_REAL_APISERVER_CACHE") or os.path.join(base, "kubectl-aicr", "real-apiserver")


def _module_sum(folder):
    import hashlib
    data = b""
    for name in ("go.mod", "go.sum"):
        with open(os.path.join(folder, name), "rb") as f:
            data += f.read()
    return hashlib.sha256(data).hexdigest()[:16]


def expected_manifest(version, pins=None):
    """The manifest build.sh writes for this version (keep in step with build.sh ``manifest``)."""
    pins = pins or read_versions()
    etcd = pins["ETCD_FOR_" + version]
    return ("kube-apiserver=%s\netcd=%s\nbuild-recipe=%s\nkube-apiserver-module=%s\netcd-module=%s\n" % (
        version, etcd, pins["BUILD_RECIPE"], _module_sum(os.path.join(MODULES, "kube-apiserver-" + version)),
        _module_sum(os.path.join(MODULES, "etcd-" + etcd))))


def find_binaries(version=None):
    """Return ``(paths, None)`` with ``paths = {"kube-apiserver": ..., "etcd": ..., "version": ...}`` when the
    cache for the pinned ``version`` (default :func:`chosen_version`) is complete, else ``(None, reason)``.
    Never falls back to binaries of another version or from PATH."""
    pins = read_versions()
    try:
        version = version or chosen_version(pins)
    except RealAPIServerError as e:
        return None, str(e)
    folder = os.path.join(cache_root(), version)
    paths = {name: os.path.join(folder, name) for name in ("kube-apiserver", "etcd")}
    manifest_path = os.path.join(folder, "manifest")
    hint = "run `make real-apiserver` (tests/real_apiserver/build.sh %s)" % version
    if not os.path.isdir(folder):
        return None, "no real kube-apiserver %s in %s: %s" % (version, folder, hint)
    missing = [p for p in paths.values() if not os.access(p, os.X_OK)]
    if missing or not os.path.isfile(manifest_path):
        return None, "incomplete real-apiserver cache in %s (missing %s): %s" % (
            folder, ", ".join(missing) or "manifest", hint)
    with open(manifest_path, encoding="utf-8") as f:
        manifest = f.read()
    if manifest.strip() != expected_manifest(version, pins).strip():
        return None, ("the real-apiserver cache in %s was built with other pins than "
                      "tests/real_apiserver/versions.env:\n%s\nrun tests/real_apiserver/build.sh --rebuild %s"
                      % (folder, manifest, version))
    paths["version"] = version
    return paths, None


# ---------------------------------------------------------------------------- helpers


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError as e:
        return "(no log: %s)" % e
    return "\n".join(text.splitlines()[-lines:])


def _write_yaml(path, data):
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, default_flow_style=False, sort_keys=False)
    os.chmod(path, 0o600)
    return path


def read_yaml_documents(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


# Fields the server owns: dropped from an object before it is created or replaced.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                    "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds")


class _Process:
    """One child process with its log file; stopped by PID."""

    def __init__(self, name, argv, log_path):
        self.name, self.argv, self.log_path = name, argv, log_path
        self._log = open(log_path, "ab")
        self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._log,
                                      stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def stop(self, timeout=STOP_TIMEOUT):
        if self.popen.poll() is None:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.popen.wait(timeout)
        self._log.close()


# ---------------------------------------------------------------------------- the server


class RealAPIServer:
    """etcd + kube-apiserver on 127.0.0.1 with the AICR CRDs, RBAC and test users.

    ``binaries``: ``{"kube-apiserver": path, "etcd": path}`` (default: the pinned cache,
    :func:`find_binaries`). ``workdir``: where certificates, data and logs go (default: a
    temporary folder, removed at stop unless ``keep_workdir``).

    Attributes after :meth:`start`: ``url``, ``port``, ``ca_file``, ``admin_kubeconfig``,
    ``workdir``, ``apiserver_log``, ``etcd_log``, ``tokens`` (user -> bearer token).
    Every wait is bounded (``ready_timeout``, 60 s, for each start-up step); a failure raises
    :class:`RealAPIServerError` with the last lines of the log, and keeps the workdir.
    """

    def __init__(self, binaries=None, workdir=None, keep_workdir=False, ready_timeout=READY_TIMEOUT,
                 users=USERS, admission=True):
        if binaries is None:
            binaries, reason = find_binaries()
            if binaries is None:
                raise RealAPIServerError(reason)
        self.binaries = dict(binaries)
        self.ready_timeout = ready_timeout
        self.users = {u.name: u for u in users}
        self._owns_workdir = workdir is None and not keep_workdir
        self._workdir_arg = workdir
        self.workdir = None
        self.url = None
        self.port = None
        self.ca_file = None
        self.admin_kubeconfig = None
        self.tokens = {}
        self._etcd = None
        self._apiserver = None
        self._client_certs = {}
        self._contexts = {}
        self._discovery = {}
        self._atexit = False
        self.admission = admission
        self.audit = None
        self.version = self.binaries.get("version")
        self.version_line = None

    # ---- lifecycle

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        """Start etcd and kube-apiserver, wait until ready, install CRDs, namespace and RBAC.
        Returns self. On failure everything started is stopped and RealAPIServerError raised."""
        try:
            self._start()
        except BaseException:
            if self.workdir and self._owns_workdir:  # keep the logs to look at
                self._owns_workdir = False
                sys.stderr.write("real_apiserver: start failed; kept %s\n" % self.workdir)
            self.stop()
            raise
        return self

    def _start(self):
        self.workdir = self._workdir_arg or tempfile.mkdtemp(prefix="aicr-real-apiserver-")
        os.makedirs(self.workdir, exist_ok=True)
        if not self._atexit:
            atexit.register(self.stop)
            self._atexit = True
        pki = os.path.join(self.workdir, "pki")
        os.makedirs(pki, exist_ok=True)
        self.ca = certs.make_ca()
        self.ca_file = certs.write_ca(self.ca, pki)
        serving = certs.write_server_cert(self.ca, pki)
        sa_key, sa_pub = self._write_service_account_keys(pki)
        token_file = self._write_token_file(pki)

        etcd_client, etcd_peer = free_port(), free_port()
        self.etcd_log = os.path.join(self.workdir, "etcd.log")
        self.etcd_url = "http://127.0.0.1:%d" % etcd_client
        self._etcd = _Process("etcd", [
            self.binaries["etcd"],
            "--name=aicr-test",
            "--data-dir=" + os.path.join(self.workdir, "etcd-data"),
            "--listen-client-urls=" + self.etcd_url,
            "--advertise-client-urls=" + self.etcd_url,
            "--listen-peer-urls=http://127.0.0.1:%d" % etcd_peer,
            "--initial-advertise-peer-urls=http://127.0.0.1:%d" % etcd_peer,
            "--initial-cluster=aicr-test=http://127.0.0.1:%d" % etcd_peer,
            "--initial-cluster-state=new",
            "--log-level=warn",
        ], self.etcd_log)
        self._wait("etcd to answer /health", self._etcd, lambda: self._etcd_healthy(), self.etcd_log)

        self.audit = audit_sink.AuditSink().start()
        audit_policy = _write_yaml(os.path.join(self.workdir, "audit-policy.yaml"), audit_sink.policy())
        audit_config = _write_yaml(os.path.join(self.workdir, "audit-webhook.kubeconfig"), self.audit.kubeconfig())
        self.port = free_port()
        self.url = "https://127.0.0.1:%d" % self.port
        self.apiserver_log = os.path.join(self.workdir, "kube-apiserver.log")
        self.version_line = subprocess.run([self.binaries["kube-apiserver"], "--version"], capture_output=True,
                                           text=True, timeout=30).stdout.strip()
        self._apiserver = _Process("kube-apiserver", [
            self.binaries["kube-apiserver"],
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            "--endpoint-reconciler-type=none",  # no kubernetes Service endpoint (1.37 refuses a loopback one)
            "--secure-port=%d" % self.port,
            "--etcd-servers=" + self.etcd_url,
            "--tls-cert-file=" + serving.cert,
            "--tls-private-key-file=" + serving.key,
            "--client-ca-file=" + self.ca_file,
            "--token-auth-file=" + token_file,
            "--authorization-mode=RBAC",
            "--service-account-key-file=" + sa_pub,
            "--service-account-signing-key-file=" + sa_key,
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--api-audiences=https://kubernetes.default.svc.cluster.local",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--cert-dir=" + os.path.join(self.workdir, "apiserver-certs"),
            # the audit webhook backend (tests/support/audit_sink.py): every event sent while its request waits
            "--audit-policy-file=" + audit_policy,
            "--audit-webhook-config-file=" + audit_config,
            "--audit-webhook-mode=blocking",
            "--audit-webhook-initial-backoff=100ms",
            "--profiling=false",
            "--v=1",
        ], self.apiserver_log)
        self.admin_kubeconfig = self.write_kubeconfig(os.path.join(self.workdir, "admin.kubeconfig"),
                                                      user="admin", style="cert-files")
        self._wait("kube-apiserver /readyz", self._apiserver, self._ready, self.apiserver_log)

        self.load_objects(read_yaml_documents(CRDS_FILE))
        for crd in read_yaml_documents(CRDS_FILE):
            self._wait_crd(crd)
        self.load_objects([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}}])
        self.load_objects(read_yaml_documents(RBAC_FILE))
        if self.admission:
            self._install_policies()

    def policies(self):
        """The documents of admission-policies.yaml as the tier installs them: each policy with one more
        matchCondition, ``not-the-tiers-exempt-admin`` (see :data:`EXEMPT_USER`)."""
        docs = read_yaml_documents(POLICIES_FILE)
        for doc in docs:
            if doc["kind"] == "ValidatingAdmissionPolicy":
                doc["spec"].setdefault("matchConditions", []).append({
                    "name": "not-the-tiers-exempt-admin",
                    "expression": "request.userInfo.username != %s" % json.dumps(EXEMPT_USER)})
        return docs

    def _install_policies(self):
        """Install the operator's ValidatingAdmissionPolicies and bindings and wait until the server enforces
        every one of them: a probe rollout's update that each policy refuses is denied by that policy (the
        server loads policies asynchronously, within a second or so)."""
        self.load_objects(self.policies())
        probe = {"apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
                 "metadata": {"name": "aicr-policy-probe"},
                 "spec": {"deadline": "2030-01-01T00:00:00Z", "approval": {"user": "x", "expires": "x",
                                                                           "reason": "x"},
                          "acknowledgements": [{"release": "a", "user": "x", "time": "x"}]},
                 "status": {"phase": "Validating"}}
        path = self.object_path(self.load_objects([probe])[0])
        bad = {
            "aicr-rollout-approval": [{"op": "remove", "path": "/spec/approval"}],
            "aicr-rollout-revocation": [{"op": "add", "path": "/spec/revocation", "value": {"user": "admin"}}],
            "aicr-rollout-acknowledgements": [{"op": "remove", "path": "/spec/acknowledgements/0"}],
            "aicr-rollout-immutable": [{"op": "replace", "path": "/spec/deadline", "value": "2031-01-01T00:00:00Z"}],
        }
        for policy, patch in bad.items():
            def denied():
                code, body = self.request("PATCH", path + "?dryRun=All", patch,
                                          content_type="application/json-patch+json", timeout=5)
                return code == 422 and "ValidatingAdmissionPolicy '%s'" % policy in (body or {}).get("message", "")
            self._wait("the policy %s to be enforced" % policy, self._apiserver, denied, self.apiserver_log)
        self._call("DELETE", path)

    def stop(self):
        """Stop kube-apiserver, then etcd (SIGTERM by PID, SIGKILL after 10 s); remove the
        temporary folder. Safe to call twice."""
        for proc in (self._apiserver, self._etcd):
            if proc is not None:
                proc.stop()
        if self.audit is not None:
            self.audit.stop()
        self.audit = None
        self._apiserver = self._etcd = None
        if self._owns_workdir and self.workdir and os.path.isdir(self.workdir):
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self._owns_workdir:
            self.workdir = None

    # ---- waits

    def _wait(self, what, proc, check, log_path, timeout=None):
        timeout = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        last = None
        while True:
            if not proc.alive():
                raise RealAPIServerError("%s exited with status %s while waiting for %s; last lines of %s:\n%s"
                                         % (proc.name, proc.popen.returncode, what, log_path, _tail(log_path)))
            try:
                if check():
                    return
            except Exception as e:  # connection refused while starting, etc.
                last = e
            if time.monotonic() > deadline:
                raise RealAPIServerError("timed out after %g s waiting for %s (last error: %s); last lines of %s:\n%s"
                                         % (timeout, what, last, log_path, _tail(log_path)))
            time.sleep(0.2)

    def _etcd_healthy(self):
        with urllib.request.urlopen(self.etcd_url + "/health", timeout=2) as r:
            return json.loads(r.read().decode()).get("health") == "true"

    def _ready(self):
        code, _ = self.request("GET", "/readyz", timeout=5)
        return code == 200

    def _wait_crd(self, crd):
        name = crd["metadata"]["name"]
        group, version = crd["spec"]["group"], crd["spec"]["versions"][0]["name"]
        plural = crd["spec"]["names"]["plural"]

        def established():
            code, body = self.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
            conditions = (body.get("status") or {}).get("conditions") or [] if code == 200 else []
            if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return False
            code, _ = self.request("GET", "/apis/%s/%s/%s" % (group, version, plural))
            return code == 200

        self._wait("CRD %s to be Established and served" % name, self._apiserver, established,
                   self.apiserver_log)
        self._discovery.pop("%s/%s" % (group, version), None)

    # ---- credentials and kubeconfigs

    def _write_service_account_keys(self, folder):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        key_path, pub_path = os.path.join(folder, "sa.key"), os.path.join(folder, "sa.pub")
        with open(key_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        os.chmod(key_path, 0o600)
        with open(pub_path, "wb") as f:
            f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
        return key_path, pub_path

    def _write_token_file(self, folder):
        # --token-auth-file: token,user,uid,"group1,group2" (one a line)
        lines = []
        for i, u in enumerate(self.users.values()):
            self.tokens[u.name] = "aicr-%s-%s" % (u.short, os.urandom(12).hex())
            groups = ",".join(u.groups)
            lines.append('%s,%s,uid-%d,"%s"' % (self.tokens[u.name], u.name, i + 1, groups)
                         if groups else "%s,%s,uid-%d" % (self.tokens[u.name], u.name, i + 1))
        path = os.path.join(folder, "tokens.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(path, 0o600)
        return path

    def token(self, username):
        """The bearer token of a user (random per start)."""
        return self.tokens[username]

    def client_cert_files(self, username):
        """A client certificate for a user (CN = name, O = groups), made once; CertFiles."""
        if username not in self._client_certs:
            u = self.users[username]
            self._client_certs[username] = certs.write_client_cert(
                self.ca, os.path.join(self.workdir, "pki"), "client-" + u.short, u.name, u.groups)
        return self._client_certs[username]

    def kubeconfig(self, user="alice@example.com", style=None):
        """A kubeconfig dict for one user of this server. ``style``: ``"token"``, ``"cert-files"`` or
        ``"cert-data"``; default cert-files for alice and admin, else token."""
        u = self.users[user]
        style = style or ("cert-files" if u.cert else "token")
        if style == "token":
            entry = {"token": self.tokens[user]}
        elif style in ("cert-files", "cert-data"):
            files = self.client_cert_files(user)
            if style == "cert-files":
                entry = {"client-certificate": files.cert, "client-key": files.key}
            else:
                import base64
                entry = {k: base64.b64encode(open(p, "rb").read()).decode("ascii") for k, p in
                         (("client-certificate-data", files.cert), ("client-key-data", files.key))}
        else:
            raise ValueError("unknown kubeconfig style %r (token, cert-files, cert-data)" % style)
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "aicr-real", "cluster": {"server": self.url,
                                                      "certificate-authority": self.ca_file}}],
            "users": [{"name": u.short, "user": entry}],
            "contexts": [{"name": u.short, "context": {"cluster": "aicr-real", "user": u.short}}],
            "current-context": u.short,
        }

    def write_kubeconfig(self, path, user="alice@example.com", style=None):
        """Write :meth:`kubeconfig` to ``path`` (mode 0600). Returns ``path``."""
        return _write_yaml(path, self.kubeconfig(user, style))

    # ---- HTTP

    def _ssl_context(self, user, style):
        key = (user, style)
        if key not in self._contexts:
            ctx = ssl.create_default_context(cafile=self.ca_file)
            if user is not None and style == "cert":
                files = self.client_cert_files(user)
                ctx.load_cert_chain(files.cert, files.key)
            self._contexts[key] = ctx
        return self._contexts[key]

    def request(self, method, path, body=None, user="admin", token=None, content_type=None,
                timeout=REQUEST_TIMEOUT, raw=False, impersonate=None, headers_out=None):
        """One HTTPS request; returns ``(status code, decoded JSON body or text)``, never raises
        for an HTTP error. Identity: ``user`` (admin and alice by client certificate, the others
        by token; None for anonymous) or an explicit bearer ``token``. ``body``: dict (JSON) or
        bytes; ``content_type`` defaults to application/json. ``impersonate``: a username sent
        as ``Impersonate-User`` (the server then judges that user). ``headers_out``: a list that receives
        the answer's headers as (name, value) pairs. The User-Agent is :data:`HARNESS_AGENT`."""
        headers = {"Accept": "application/json", "User-Agent": HARNESS_AGENT}
        if impersonate:
            headers["Impersonate-User"] = impersonate
        style = None
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        elif user is not None:
            if self.users[user].cert:
                style = "cert"
            else:
                headers["Authorization"] = "Bearer " + self.tokens[user]
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            headers["Content-Type"] = content_type or "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, context=self._ssl_context(user if style else None, style),
                                        timeout=timeout) as r:
                code, payload, answer_headers = r.status, r.read(), r.getheaders()
        except urllib.error.HTTPError as e:
            code, payload, answer_headers = e.code, e.read(), list(e.headers.items())
        if headers_out is not None:
            headers_out.extend(answer_headers)
        if raw:
            return code, payload
        try:
            return code, json.loads(payload.decode("utf-8")) if payload else None
        except ValueError:
            return code, payload.decode("utf-8", "replace")

    def _call(self, method, path, body=None, ok=(200, 201), **kw):
        code, reply = self.request(method, path, body, **kw)
        if code not in ok:
            raise APIStatusError(method, path, code, reply)
        return reply

    # ---- objects

    def _resource(self, api_version, kind):
        """(plural, namespaced, has_status) for a kind, from discovery (cached)."""
        for attempt in (0, 1):
            if attempt or api_version not in self._discovery:
                path = "/api/v1" if api_version == "v1" else "/apis/" + api_version
                self._discovery[api_version] = self._call("GET", path)["resources"]
            resources = self._discovery[api_version]
            for r in resources:
                if r.get("kind") == kind and "/" not in r["name"]:
                    has_status = any(x["name"] == r["name"] + "/status" for x in resources)
                    return r["name"], r.get("namespaced", False), has_status
        raise RealAPIServerError("the server does not serve kind %s in %s" % (kind, api_version))

    def object_path(self, obj_or_api_version, kind=None, name=None, namespace=None):
        """The URL path of an object (a dict), or of a collection given apiVersion and kind."""
        if isinstance(obj_or_api_version, dict):
            obj = obj_or_api_version
            api_version, kind = obj["apiVersion"], obj["kind"]
            name = obj.get("metadata", {}).get("name")
            namespace = obj.get("metadata", {}).get("namespace")
        else:
            api_version = obj_or_api_version
        plural, namespaced, _ = self._resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        if namespaced:
            base += "/namespaces/" + urllib.parse.quote(namespace or "default", safe="")
        base += "/" + plural
        return base + ("/" + urllib.parse.quote(name, safe="") if name else "")

    def load_objects(self, objects):
        """Create each object as admin (replace it when it exists), then write its ``status``
        through the status subresource where the resource has one. Server-owned metadata (uid,
        resourceVersion, creationTimestamp, ...) is dropped first. Returns the stored objects."""
        stored = []
        for original in objects:
            obj = copy.deepcopy(original)
            meta = obj.setdefault("metadata", {})
            for field in _SERVER_METADATA:
                meta.pop(field, None)
            plural, namespaced, has_status = self._resource(obj["apiVersion"], obj["kind"])
            if namespaced:
                meta.setdefault("namespace", "default")
            item = self.object_path(obj)
            collection = item.rsplit("/", 1)[0]
            status = obj.get("status") if has_status else None
            code, reply = self.request("POST", collection, obj)
            if code == 409 and (reply or {}).get("reason") == "AlreadyExists" and obj["kind"] == "RuntimeRollout":
                # Replaced by delete and create: an update would meet the operator's admission rules
                # (an approval cannot be removed, the spec is immutable), which judge people's writes.
                self._call("DELETE", item)
                reply = self._call("POST", collection, obj)
            elif code == 409 and (reply or {}).get("reason") == "AlreadyExists":
                current = self._call("GET", item)
                obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                if has_status:
                    obj["status"] = current.get("status")
                reply = self._call("PUT", item, obj)
            elif code not in (200, 201):
                raise APIStatusError("POST", collection, code, reply)
            if status is not None:
                reply["status"] = status
                reply = self._call("PUT", item + "/status", reply)
            if obj["kind"] == "CustomResourceDefinition":
                self._discovery.pop("%s/%s" % (obj["spec"]["group"], obj["spec"]["versions"][0]["name"]), None)
            stored.append(reply)
        return stored

    def apply_action(self, action, operator_namespace=OPERATOR_NAMESPACE):
        """Make one change of tests/support/interpositions.py as real requests: ``recreate`` deletes the object and
        creates it again (a new uid; a rollout's status written after); ``patch`` sends its JSON patch to the
        object or its ``status`` subresource as ``action["user"]``: a configured user with their own
        credentials, ``admin`` as :data:`EXEMPT_USER` (the changes the operator's rules
        forbid everyone, made anyway to test the plugin's pins), anyone else by impersonation (the
        operator's service account). Raises APIStatusError when the server refuses."""
        api_version = "v1" if action["kind"] == "ConfigMap" else "operator.aicr.run/v1alpha1"
        namespace = operator_namespace if action["kind"] == "ConfigMap" else None
        path = self.object_path(api_version, action["kind"], action["name"], namespace)
        if action["action"] == "recreate":
            self._call("DELETE", path, ok=(200, 404))
            obj = copy.deepcopy(action["object"])
            obj.setdefault("apiVersion", api_version)
            if namespace:
                obj["metadata"]["namespace"] = namespace
            return self.load_objects([obj])[0]
        if action["action"] != "patch":
            raise ValueError("unknown action %r" % action["action"])
        user = action.get("user") or "admin"
        who = {"user": EXEMPT_USER} if user == "admin" else (
            {"user": user} if user in self.users else {"user": "admin", "impersonate": user})
        if action.get("subresource"):
            path += "/" + action["subresource"]
        return self._call("PATCH", path, action["patch"], content_type="application/json-patch+json", **who)

    @property
    def requests(self):
        """The requests the server completed since the last :meth:`clear_requests`, from its audit log
        (tests/support/audit_sink.py ``Record``), without the harness's own (:data:`HARNESS_AGENT`)."""
        return [r for r in self.audit.requests if r.user_agent != HARNESS_AGENT]

    def clear_requests(self):
        self.audit.clear()

    def get(self, obj_or_api_version, kind=None, name=None, namespace=None, user="admin"):
        """GET an object (admin by default); raises APIStatusError on an HTTP error."""
        return self._call("GET", self.object_path(obj_or_api_version, kind, name, namespace), user=user)


# ---------------------------------------------------------------------------- pytest


def _fixture():
    @pytest.fixture(scope="session")
    def real_apiserver():
        """A started :class:`RealAPIServer` for the session (CRDs, namespace, RBAC installed).
        Skips when the pinned binaries are not built, or fails when AICR_REQUIRE_REAL_APISERVER=1."""
        binaries, reason = find_binaries()
        if binaries is None:
            if os.environ.get(REQUIRE_ENV) == "1":
                pytest.fail("%s=1 but %s" % (REQUIRE_ENV, reason), pytrace=False)
            pytest.skip(reason)
        server = RealAPIServer(binaries)
        try:
            server.start()
        except RealAPIServerError as e:
            pytest.fail("the real API server did not start: %s" % e, pytrace=False)
        try:
            yield server
        finally:
            server.stop()

    return real_apiserver


try:
    import pytest
except ImportError:  # used as a plain library
    pytest = None
else:
    real_apiserver = _fixture()
