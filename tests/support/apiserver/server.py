"""The test API server: the APIServer: users, certificates, fixtures, RBAC and faults behind one HTTPS endpoint."""

import base64
import copy
import dataclasses
import itertools
import json
import os
import secrets
import shutil
import socket
import ssl
import tempfile
import threading
import traceback
import urllib.parse
import uuid

import yaml

from .. import certs

from .admission import Denied, POLICIES, _spec, check_rollout_update
from .fixtures import load_fixtures, utc_now
from .handler import RequestRecord, _HTTPServer, _page, _sni_callback
from .patches import PatchError, apply_json_patch, apply_merge_patch, json_equal
from .rbac import Attributes, UserInfo, default_grants, default_users, request_info
from .resources import ADMIN_USER, ANONYMOUS, AUTHENTICATED, CREATE_TYPES, CR_PATCH_TYPES, FAULTS, FIXTURE_ANNOTATION, GROUP, JSON_PATCH, MAX_BODY, MERGE_PATCH, RESOURCES, Resource, SERVED_GROUP_VERSIONS, SERVED_PATCH_TYPES, UNAUTHENTICATED, VERSION, resource_for
from .selectors import labels_match, parse_field_selector, parse_label_selector
from .status import APIError, TextError, bad_request, conflict, details, field_invalid, forbidden, forbidden_message, go_quote, method_not_allowed, method_not_supported, not_found, page_not_found, patch_failed, path_not_found, policy_denied, status, too_large, unauthorized, unsupported_media_type
from .store import Store


class APIServer:
    """The test API server. See the module docstring for an example.

    Constructor arguments:

    - ``fixtures_dir``: folder of fixture YAML (:func:`load_fixtures`); None: empty store
    - ``workdir``: folder for the CA, certificates and kubeconfigs; None: a temporary
      folder removed by :meth:`stop`
    - ``users``: list of :class:`User` (default :func:`default_users`)
    - ``operator_namespace``: where readers and approvers may read ConfigMaps
    - ``basic_auth``: accept ``Authorization: Basic`` for users with a password
    - ``host``, ``port``: where to listen (port 0: a free port)
    - ``now``: the time placeholders resolve against (default: now, UTC, seconds)
    - ``max_body``: request body limit in bytes (kube-apiserver's default 3 MiB)
    - ``verbose``: log requests to stderr
    - ``server_names``: the names of the server certificate (default
      :data:`certs.SERVER_NAMES`); ``cn_only``: put the first name in the subject CN
      only, with no subjectAltName (a certificate Go and the plugin refuse)
    - ``path_prefix``: serve the API under this path too (``/k8s/clusters/c-x``, as
      Rancher's proxy does); request records keep the full path

    Attributes: ``url``, ``port``, ``ca_file``, ``server_cert`` (CertFiles), ``users``
    (name -> User), ``now``, ``store``, ``fault`` and the fault settings
    (``fault_hang_seconds``, ``fault_delay``, ``fault_huge_bytes``), ``tls_errors``.
    """

    def __init__(self, fixtures_dir=None, workdir=None, users=None, operator_namespace="aicr-system",
                 basic_auth=False, host="127.0.0.1", port=0, now=None, max_body=MAX_BODY,
                 verbose=False, server_names=None, cn_only=False, path_prefix=""):
        self.now = now or utc_now()
        self.operator_namespace = operator_namespace
        self.basic_auth = basic_auth
        self.host, self.port = host, port
        self.max_body = max_body
        self.verbose = verbose
        self.grants = default_grants(operator_namespace)
        self.users = {}
        for u in (users if users is not None else default_users()):
            self.users[u.name] = dataclasses.replace(
                u, token=u.token or secrets.token_urlsafe(24),
                uid=u.uid or str(uuid.uuid5(uuid.NAMESPACE_URL, "user:" + u.name)))
        self._owns_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="aicr-apiserver-")
        os.makedirs(self.workdir, exist_ok=True)
        self.ca = certs.make_ca()
        self.ca_file = certs.write_ca(self.ca, self.workdir)
        self.path_prefix = path_prefix.rstrip("/")
        if cn_only:
            self.server_cert = certs.write_cn_only_server_cert(self.ca, self.workdir, (server_names or ["x"])[0])
        else:
            self.server_cert = certs.write_server_cert(self.ca, self.workdir, server_names or certs.SERVER_NAMES)
        self._client_certs = {}
        for u in self.users.values():
            if u.cert:
                self.client_cert_files(u.name)
        self._ssl_context = self._make_ssl_context()
        self.store = Store()
        for obj in load_fixtures(fixtures_dir, self.now) if fixtures_dir else []:
            self.store.put(obj, self.now)
        self._lock = threading.Lock()
        self._requests = []
        self._open_sockets = set()
        self._connection_ids = itertools.count(1)
        self._stopping = threading.Event()
        self.tls_errors = []
        self.handshake_timeout = 10
        self.idle_timeout = 60
        self._fault = None
        self._fault_left = None
        self._interpositions = []
        self.answers = {}  # path -> (HTTP status, JSON payload) sent as is to every method, unauthenticated
        self.fault_hang_seconds = 30.0
        self.fault_delay = 1.0
        self.fault_huge_bytes = 64 * 1024 * 1024
        self.late_answers = []  # the HTTP status each reset-store-later request got when carried out, late
        # Hostile response headers for fuzzing, {name: value}: "Date" replaces the clock's; "Content-Type"
        # and "Content-Length" replace the real ones (the connection then closes after the answer).
        self.header_values = {}
        # Texts sent as ``Warning: 299 - "<text>"`` headers on every answer (a deprecated version, a Warn policy).
        self.warnings = []
        self._httpd = None
        self._thread = None
        self.url = None

    # ---- lifecycle

    def _make_ssl_context(self):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.server_cert.cert, self.server_cert.key)
        ctx.load_verify_locations(self.ca_file)
        ctx.verify_mode = ssl.CERT_OPTIONAL  # requested, verified against the test CA when sent
        ctx.sni_callback = _sni_callback
        return ctx

    def start(self):
        """Listen and serve in a background thread; sets ``url`` and ``port``. Returns self."""
        self._httpd = _HTTPServer((self.host, self.port), self)
        self.port = self._httpd.server_address[1]
        self.url = "https://%s:%d" % (self.host if ":" not in self.host else "[%s]" % self.host, self.port)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="aicr-apiserver", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop serving, drop open connections, and remove a temporary workdir."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            with self._lock:
                sockets = list(self._open_sockets)
            for s in sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._thread.join(5)
            self._httpd = None
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ---- for tests

    def token(self, username):
        """The bearer token of a configured user (random per server)."""
        return self.users[username].token

    @property
    def requests(self):
        """A copy of the request log: list of :class:`RequestRecord`, oldest first."""
        with self._lock:
            return list(self._requests)

    def clear_requests(self):
        """Forget the request log."""
        with self._lock:
            self._requests.clear()

    def _record(self, record):
        with self._lock:
            self._requests.append(record)

    def get_object(self, kind, name, namespace=None):
        """A copy of a stored object, or None. ``kind``: Kind or plural; ConfigMaps default to
        the operator namespace."""
        res = resource_for(kind)
        ns = (namespace or self.operator_namespace) if res.namespaced else ""
        return self.store.get(res.plural, ns, name)

    def put_object(self, obj):
        """Store (create or replace) an object dict; fills uid/creationTimestamp, bumps the
        resourceVersion; returns the stored copy. A ConfigMap without a namespace goes to the
        operator namespace."""
        obj = copy.deepcopy(obj)
        if resource_for(obj.get("kind", "")).namespaced:
            obj.setdefault("metadata", {}).setdefault("namespace", self.operator_namespace)
        return self.store.put(obj, self.now)

    def add_rollouts(self, count, size=0, prefix="rollout-bulk-", role="install"):
        """Store ``count`` copies of the rollout fixture ``role`` named ``prefix`` + a 4-digit number, each
        made about ``size`` bytes of JSON by an annotation of that many characters (a large list made here,
        not read from fixture files); their names."""
        template = copy.deepcopy(self.fixture(role))
        labels = dict(template["metadata"].get("labels") or {})
        annotations = {"test.aicr.run/padding": "x" * size} if size else {}
        names = []
        for index in range(count):
            template["metadata"] = {"name": "%s%04d" % (prefix, index), "labels": labels,
                                    "annotations": annotations}
            names.append(self.put_object(template)["metadata"]["name"])
        return names

    def delete_object(self, kind, name, namespace=None):
        """Remove an object; True if it existed."""
        res = resource_for(kind)
        return self.store.delete(res.plural, (namespace or self.operator_namespace) if res.namespaced else "", name)

    def snapshot(self):
        """A copy of every stored object, for :meth:`restore` (the resourceVersion counter
        is not rewound: it only grows)."""
        with self.store.lock:
            return copy.deepcopy(self.store.objects)

    def restore(self, snapshot):
        """Put the store back to a :meth:`snapshot`."""
        with self.store.lock:
            self.store.objects = copy.deepcopy(snapshot)

    def fixture(self, role):
        """A copy of the object whose ``test.aicr.run/fixture`` annotation is ``role``."""
        for plural in RESOURCES:
            for obj in self.store.list(plural)[0]:
                if (obj["metadata"].get("annotations") or {}).get(FIXTURE_ANNOTATION) == role:
                    return obj
        raise KeyError("no fixture %r" % role)

    def fixture_name(self, role):
        """The metadata.name of :meth:`fixture`."""
        return self.fixture(role)["metadata"]["name"]

    @property
    def fault(self):
        """The fault applied to the next requests, or None. Set it to one of :data:`FAULTS`
        (all requests until reset) or use :meth:`set_fault` to limit the count.

        hang: no answer for ``fault_hang_seconds``, then close. trickle: the real answer,
        one body byte per ``fault_delay`` seconds. reset: TCP RST, no answer.
        close-mid-body: headers and half the body, then close. html-500: a proxy's HTML 500.
        redirect: 302 to an SSO login page. huge: 200 with ``fault_huge_bytes`` of body.
        The real answer framed otherwise (RFC 9112): chunked (chunked transfer coding, small chunks with
        an extension, a trailer field), interim (a 100 Continue and a 103 Early Hints first), http10-close
        (HTTP/1.0, no Content-Length, the body ends at the close), folded-header (an obsolete line
        folding in a header field); framed wrongly: bad-chunk (a chunk size that is not hex),
        two-lengths (two different Content-Length fields). idle-close: the real answer without
        ``Connection: close``, then the connection closed, as a proxy's idle timeout closes it.
        endless-pages: every answer an empty list page with a new 8 KiB ``continue`` token.
        glued-408: the real answer and, in the same write, an unasked 408; the connection stays open.
        Error answers, the request not carried out: etcd-500 (a Status of an etcd timeout), timeout-504 (the
        timeout filter's Status), bad-gateway-502 (a proxy's HTML page), unavailable-503 (an empty body),
        too-many-429 (the max-in-flight filter's text). store-X: the request carried out (a PATCH stored), then
        answered as fault X (store-html-500 too), closed (store-close), reset (store-reset), held for
        ``fault_hang_seconds`` (store-hang) or answered 409 (store-conflict). reset-store-later: a TCP RST at
        once, and the request carried out ``fault_delay`` seconds later all the same (a proxy that delivers it
        late), its status then appended to ``late_answers``.
        """
        return self._fault

    @fault.setter
    def fault(self, kind):
        self.set_fault(kind)

    def next_page(self):
        """A new number for each call (the endless-pages fault's tokens differ)."""
        with self._lock:
            self._pages = getattr(self, "_pages", 0) + 1
            return self._pages

    def set_fault(self, kind, count=None, method=None):
        """Apply fault ``kind`` (None: no fault) to the next ``count`` requests (None: all); ``method``: only
        to requests of that HTTP method (e.g. "PATCH"), the others are served."""
        if kind is not None and kind not in FAULTS:
            raise ValueError("fault must be one of %s" % (FAULTS,))
        with self._lock:
            self._fault, self._fault_left = kind, count
            self._fault_method = method

    def _take_fault(self, method=None):
        with self._lock:
            kind = self._fault
            if kind and getattr(self, "_fault_method", None) not in (None, method):
                return None
            if kind and self._fault_left is not None:
                self._fault_left -= 1
                if self._fault_left <= 0:
                    self._fault, self._fault_left = None, None
            return kind

    # ---- certificates and kubeconfig

    def client_cert_files(self, username, key_type="rsa", key_format="traditional", passphrase=None):
        """Client certificate files for a configured user (CN=name, O=groups), made once per
        variant in ``workdir``: ``<short>[-ec][-pkcs8][-encrypted].crt/.key``. Returns CertFiles."""
        key = (username, key_type, key_format, passphrase)
        if key not in self._client_certs:
            user = self.users[username]
            stem = user.short + ("-ec" if key_type == "ec" else "") + (
                "-pkcs8" if key_format == "pkcs8" else "") + ("-encrypted" if passphrase else "")
            self._client_certs[key] = certs.write_client_cert(
                self.ca, self.workdir, stem, user.name, user.groups, key_type, key_format, passphrase)
        return self._client_certs[key]

    def kubeconfig_user(self, username, style=None, **cert_options):
        """The ``user`` entry of a kubeconfig for a configured user.

        ``style``: ``"cert-files"`` (client-certificate/-key paths), ``"cert-data"``
        (base64 -data fields), ``"token"``, ``"basic"`` (username/password); default
        cert-files for certificate users, else token. ``cert_options`` go to
        :meth:`client_cert_files`.
        """
        user = self.users[username]
        style = style or ("cert-files" if user.cert else "token")
        if style == "token":
            return {"token": user.token}
        if style == "basic":
            return {"username": user.name, "password": user.password}
        files = self.client_cert_files(username, **cert_options)
        if style == "cert-files":
            return {"client-certificate": files.cert, "client-key": files.key}
        if style == "cert-data":
            return {"client-certificate-data": _b64_file(files.cert), "client-key-data": _b64_file(files.key)}
        raise ValueError("unknown kubeconfig style %r" % style)

    def kubeconfig(self, users=None, current=None, styles=None, ca="file", server=None, namespace=None,
                   cluster_name="aicr-test", **cert_options):
        """A kubeconfig dict: one cluster, and one user and context per user (context name =
        :attr:`User.short`). ``ca``: ``"file"`` (certificate-authority) or ``"data"``;
        ``server`` overrides the URL (e.g. ``https://localhost:PORT``); ``styles``: username ->
        style (see :meth:`kubeconfig_user`)."""
        users = list(users or self.users)
        cluster = {"server": server or self.url}
        if ca == "data":
            cluster["certificate-authority-data"] = _b64_file(self.ca_file)
        elif ca == "file":
            cluster["certificate-authority"] = self.ca_file
        contexts, entries = [], []
        for name in users:
            short = self.users[name].short
            context = {"cluster": cluster_name, "user": short}
            if namespace:
                context["namespace"] = namespace
            contexts.append({"name": short, "context": context})
            entries.append({"name": short, "user": self.kubeconfig_user(
                name, (styles or {}).get(name), **cert_options)})
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": cluster_name, "cluster": cluster}],
            "users": entries,
            "contexts": contexts,
            "current-context": self.users[current or users[0]].short,
        }

    def write_kubeconfig(self, path, user="alice@example.com", style=None, **options):
        """Write a kubeconfig for one user (its context is current); ``style`` as in
        :meth:`kubeconfig_user`, other ``options`` as in :meth:`kubeconfig`. Returns ``path``."""
        config = self.kubeconfig(users=[user], styles={user: style} if style else None, **options)
        return _write_yaml(path, config)

    def write_kubeconfig_all(self, path, current="alice@example.com", **options):
        """Write a kubeconfig with a context per configured user, ``current`` first. Returns ``path``."""
        users = [current] + [u for u in self.users if u != current]
        return _write_yaml(path, self.kubeconfig(users=users, current=current, **options))

    # ---- request handling

    def interpose(self, rollout, actions, when="before-patch"):
        """Land another client's write on rollout ``rollout`` (its name) once, at ``when``:

        - ``"before-patch"``: just before the server handles the next PATCH of that rollout (after the
          command read it and decided, before its write is judged);
        - ``"after-read"``: just after the server answers the next GET of that rollout (before anything
          else the command reads, such as the assessment report).

        ``actions``: a list of action dicts of tests/support/interpositions.py (``patch``: a JSON patch applied to
        the stored object as is, admission rules not applied, status included; ``recreate``: deleted and
        stored again with a new UID). When they land, the request log gets a record with method
        ``INTERPOSE``, the object's path, ``query`` = ``when`` and the actions as its JSON body.
        """
        if when not in ("before-patch", "after-read"):
            raise ValueError("when must be before-patch or after-read")
        with self._lock:
            self._interpositions.append((rollout, when, copy.deepcopy(actions)))

    def _land_interposition(self, rollout, when):
        with self._lock:
            found = next((i for i in self._interpositions if i[:2] == (rollout, when)), None)
            if found is None:
                return
            self._interpositions.remove(found)
        actions = found[2]
        with self.store.lock:
            for action in actions:
                self._apply_action(action)
        res = RESOURCES["runtimerollouts"]
        self._record(RequestRecord(
            method="INTERPOSE", path="/apis/%s/%s/%s" % (res.api_version, res.plural, rollout), query=when,
            content_type="application/json", authorization=None, client_cert=None, sni=None, connection_id=0,
            user_agent="interposition", impersonation={}, headers=[], body=json.dumps(actions).encode(),
            user=",".join(sorted({a.get("user") or ADMIN_USER for a in actions})), status=200))

    def _apply_action(self, action):
        res = resource_for(action["kind"])
        namespace = (action.get("namespace") or self.operator_namespace) if res.namespaced else ""
        if action["action"] == "recreate":
            obj = copy.deepcopy(action["object"])
            meta = obj.setdefault("metadata", {})
            for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
                meta.pop(key, None)
            meta["uid"] = str(uuid.uuid4())
            if res.namespaced:
                meta["namespace"] = namespace
            self.store.delete(res.plural, namespace, action["name"])
            self.store.put(obj, self.now)
        elif action["action"] == "patch":
            old = self.store.get(res.plural, namespace, action["name"])
            if old is None:
                raise KeyError("interposition: no %s %s" % (res.kind, action["name"]))
            self.store.put(apply_json_patch(old, action["patch"]), self.now)
        else:
            raise ValueError("unknown interposition action %r" % action["action"])

    def _respond(self, req):
        """Authenticate, authorise and route one request -> (HTTP status, JSON body)."""
        try:
            req.user = self._authenticate(req)
            req.user = self._impersonate(req)
            req.attrs = request_info(req.method, req.path, req.query)
            self._authorize(req.user, req.attrs)
            return self._route(req)
        except APIError as e:
            return e.code, e.status
        except TextError as e:
            return e.code, e
        except Exception as e:  # a bug in the test server: answer like kube does, and say so
            traceback.print_exc()
            return 500, status(500, "InternalError", "Internal error occurred: %s" % e,
                               {"causes": [{"message": str(e)}]})

    def _authenticate(self, req):
        """kube-apiserver's order: client certificate, then bearer token, then (if enabled)
        basic auth; an invalid credential is 401; none at all is system:anonymous."""
        if req.conn.client_cert and req.conn.client_cert.get("cn"):
            cert = req.conn.client_cert
            return UserInfo(cert["cn"], list(cert["o"]) + [AUTHENTICATED])
        header = (req.headers.get("Authorization") or "").strip()
        scheme, _, credential = header.partition(" ")
        if scheme.lower() == "bearer" and credential.strip():
            token = credential.strip().split(" ")[0]
            for u in self.users.values():
                if secrets.compare_digest(u.token.encode(), token.encode()):
                    return UserInfo(u.name, list(u.groups) + [AUTHENTICATED], u.uid)
            raise unauthorized()
        if scheme.lower() == "basic" and self.basic_auth:
            try:
                name, _, password = base64.b64decode(credential.strip(), validate=True).decode("utf-8").partition(":")
            except (ValueError, UnicodeDecodeError):
                raise unauthorized()
            u = self.users.get(name)
            if u is None or u.password is None or not secrets.compare_digest(
                    u.password.encode("utf-8"), password.encode("utf-8")):
                raise unauthorized()
            return UserInfo(u.name, list(u.groups) + [AUTHENTICATED], u.uid)
        return UserInfo(ANONYMOUS, [UNAUTHENTICATED])

    def _impersonate(self, req):
        """Impersonate-* headers, as the impersonation filter handles them: each requested
        identity needs the ``impersonate`` verb (only system:masters has it here)."""
        user = req.user
        name = req.headers.get("Impersonate-User")
        groups = req.headers.get_all("Impersonate-Group") or []
        uid = req.headers.get("Impersonate-Uid")
        extras = {k[len("Impersonate-Extra-"):]: req.headers.get_all(k) for k in req.headers.keys()
                  if k.lower().startswith("impersonate-extra-")}
        if name is None:
            if groups or uid or extras:
                raise bad_request("requested impersonation of groups, uid or extra without impersonating a user")
            return user
        checks = [("", "users", name)] + [("", "groups", g) for g in groups]
        checks += [("authentication.k8s.io", "userextras/" + urllib.parse.unquote(k).lower(), v)
                   for k, vs in extras.items() for v in vs]
        if uid is not None:
            checks.append(("authentication.k8s.io", "uids", uid))
        for group, resource, value in checks:
            plural, _, sub = resource.partition("/")
            attrs = Attributes("impersonate", "", True, group, "", "", plural, sub, value)
            if not any(g.allows(user, attrs) for g in self.grants):
                raise forbidden(group, plural, value, forbidden_message(user.name, attrs))
        info = UserInfo(name, list(groups), uid or "",
                        {urllib.parse.unquote(k).lower(): vs for k, vs in extras.items()})
        if name != ANONYMOUS and AUTHENTICATED not in info.groups:
            info.groups.append(AUTHENTICATED)
        return info

    def _authorize(self, user, attrs):
        """RBAC: allowed if any grant allows; else 403 with responsewriters.Forbidden's text."""
        if not any(g.allows(user, attrs) for g in self.grants):
            raise forbidden(attrs.api_group, attrs.resource, attrs.name, forbidden_message(user.name, attrs))

    def _route(self, req):
        a = req.attrs
        if not a.resource_request:
            return self._discovery(req.path)
        builtin = a.api_group == "" or (a.api_group, a.api_version) == ("authentication.k8s.io", "v1")
        if (a.api_group, a.api_version) not in SERVED_GROUP_VERSIONS:
            raise path_not_found() if builtin else page_not_found()
        if (a.api_group, a.resource) == ("authentication.k8s.io", "selfsubjectreviews") and not a.name:
            if a.verb != "create":  # only POST is routed (as for tokenreviews on a real server)
                raise method_not_allowed()
            return self._self_subject_review(req)
        res = RESOURCES.get(a.resource)
        if (res is None or (res.group, res.version) != (a.api_group, a.api_version)
                or (a.namespace and not res.namespaced)):
            raise path_not_found() if builtin else page_not_found()
        if res.typed and (len(a.parts) > 3 or (a.name and not a.namespace) or a.subresource):
            raise path_not_found()
        if len(a.parts) > 3 or (a.subresource and a.subresource != "status"):
            # the custom resource handler answers an unknown subresource as the object's absence
            raise not_found(res, a.name)
        if a.verb == "get":
            return self._get(res, a)
        if a.verb == "list":
            return self._list(res, a, req.query)
        if a.verb == "patch" and res.plural == "runtimerollouts" and not a.subresource:
            return self._patch(res, a, req)
        raise method_not_supported(res, a.verb)

    def _get(self, res, a):
        obj = self.store.get(res.plural, a.namespace, a.name)
        if res.plural == "runtimerollouts":
            self._land_interposition(a.name, "after-read")
        if obj is None:
            raise not_found(res, a.name)
        return 200, obj

    def _list(self, res, a, query):
        labels = parse_label_selector(query.get("labelSelector", [""])[0])
        fields = parse_field_selector(query.get("fieldSelector", [""])[0], res)
        items, rv = self.store.list(res.plural, a.namespace or None)
        selected = []
        for obj in items:
            meta = obj["metadata"]
            if not labels_match(meta.get("labels") or {}, labels):
                continue
            if not all((meta.get(f, "") == v) == (op == "=") for f, op, v in fields):
                continue
            if res.typed:  # a typed list's items carry no kind/apiVersion
                obj.pop("kind", None)
                obj.pop("apiVersion", None)
            selected.append(obj)
        # A custom resource's list (unstructured) also carries an empty "continue".
        meta = {"resourceVersion": rv} if res.typed else {"continue": "", "resourceVersion": rv}
        if query.get("limit") or query.get("continue"):
            selected, meta = _page(selected, meta, query, rv)
        return 200, {"kind": res.kind + "List", "apiVersion": res.api_version, "metadata": meta,
                     "items": selected}

    def _self_subject_review(self, req):
        """POST selfsubjectreviews -> 201 with the caller's user info
        (pkg/registry/authentication/selfsubjectreview/rest.go)."""
        content_type = (req.headers.get("Content-Type") or "application/json").split(";")[0].strip()
        if content_type not in CREATE_TYPES:
            raise unsupported_media_type(CREATE_TYPES)
        if content_type == "application/json" and req.body.strip():
            try:
                json.loads(req.body)
            except ValueError as e:
                raise bad_request("error decoding body: %s" % e)
        info = {"username": req.user.name}
        if req.user.uid:
            info["uid"] = req.user.uid
        info["groups"] = req.user.groups
        if req.user.extra:
            info["extra"] = req.user.extra
        return 201, {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                     "metadata": {"creationTimestamp": None}, "status": {"userInfo": info}}

    def _patch(self, res, a, req):
        """PATCH a RuntimeRollout: the steps of handlers/patch.go and the registry's update,
        in their order, under the store lock."""
        content_type = (req.headers.get("Content-Type") or "").split(";")[0].strip()
        if content_type not in CR_PATCH_TYPES:
            raise unsupported_media_type(CR_PATCH_TYPES)
        if content_type not in SERVED_PATCH_TYPES:
            raise unsupported_media_type(SERVED_PATCH_TYPES)
        if req.body_too_large:
            raise too_large(self.max_body)
        dry_run = req.query.get("dryRun")
        if dry_run is not None and dry_run != ["All"]:
            # ValidatePatchOptions -> ValidateDryRun (apimachinery/pkg/apis/meta/v1/validation)
            # (a field.NotSupported error: the value shown as JSON, as current servers print it)
            cause = 'Unsupported value: %s: supported values: "All"' % json.dumps(dry_run, separators=(",", ":"))
            raise APIError(status(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: dryRun: ' + cause, {
                "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "dryRun"}],
                "group": "meta.k8s.io", "kind": "PatchOptions"}))
        self._land_interposition(a.name, "before-patch")
        with self.store.lock:
            old = self.store.get(res.plural, "", a.name)
            if old is None:
                raise not_found(res, a.name)
            new = self._apply_patch(content_type, req.body, old)
            self._check_update(res, a.name, old, new)
            self._check_schema(res, a.name, old, new)
            try:
                check_rollout_update(old, new, req.user.name)
            except Denied as d:
                raise policy_denied(res, a.name, POLICIES[d.policy], POLICIES[d.policy] + "-binding", d.message)
            if json_equal(new, old):
                return 200, old  # a no-op update is not written: the resourceVersion stays
            if not json_equal(_spec(new), _spec(old)):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            if dry_run:  # dryRun=All: judged like a write (admission included), nothing stored, no new version
                return 200, new
            return 200, self.store.put(new, self.now)

    @staticmethod
    def _apply_patch(content_type, body, old):
        try:
            patch = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("Invalid JSON Patch" if content_type == MERGE_PATCH else str(e))
        if content_type == JSON_PATCH:
            if not isinstance(patch, list):
                # patch.go decodes the operations first, to count them (maxJSONPatchOperations)
                raise bad_request("error decoding patch: json: cannot unmarshal %s into Go value of type "
                                  "[]handlers.jsonPatchOp" % _json_type(patch))
            if any(op is not None and not isinstance(op, dict) for op in patch):
                raise bad_request("json: cannot unmarshal array element into Go value of type "
                                  "jsonpatch.Operation")
            try:
                new = apply_json_patch(old, patch)
            except PatchError:
                raise patch_failed()
        else:
            if patch is None:
                raise bad_request("Invalid JSON Patch")
            new = apply_merge_patch(old, patch)
        if not isinstance(new, dict):
            raise APIError(status(422, "Invalid", ' "" is invalid: patch: Invalid value: %s: '
                                  'the patched object is not a JSON object' % go_quote(body.decode()), {}))
        return new

    @staticmethod
    def _check_schema(res, name, old, new):
        """The CRD schema's one bound the rules also state (tests/real_apiserver/crds.yaml: spec.approval.reason
        maxLength 1024), checked before admission as the real server does; a value the update leaves as it was
        is not judged again (CRD validation ratcheting)."""
        reason = ((_spec(new).get("approval") or {}) if isinstance(_spec(new).get("approval"), dict) else {}).get(
            "reason")
        before = ((_spec(old).get("approval") or {}) if isinstance(_spec(old).get("approval"), dict) else {}).get(
            "reason")
        # kube-openapi's MaxLength counts characters (utf8.RuneCountInString); field.TooLong's text says "bytes"
        if isinstance(reason, str) and reason != before and len(reason) > 1024:
            message = "Too long: may not be more than 1024 bytes"
            raise APIError(status(422, "Invalid", '%s.%s %s is invalid: spec.approval.reason: %s' % (
                res.kind, res.group, go_quote(name), message), details(name, res.group, res.kind, [
                    {"reason": "FieldValueTooLong", "message": message, "field": "spec.approval.reason"}])))

    def _check_update(self, res, name, old, new):
        """What the generic registry does to an update before admission (store.go Update,
        rest.BeforeUpdate, the CR strategy): name, resourceVersion precondition, system
        fields, and the status subresource (status is not written through the main resource)."""
        meta = new.get("metadata") if isinstance(new.get("metadata"), dict) else {}
        new["metadata"] = meta
        if meta.get("name") != name:
            raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                              % (meta.get("name") or "", name))
        rv = meta.get("resourceVersion")
        if rv not in (None, "") and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res, name)
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise field_invalid(res, name, "metadata.uid", meta["uid"], "field is immutable")
        for key in ("uid", "creationTimestamp", "resourceVersion", "generation"):
            if key in old["metadata"]:
                meta[key] = old["metadata"][key]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)

    def _discovery(self, path):
        """/version, /api, /apis and the group/version documents (legacy discovery, enough for
        ``kubectl get``); anything else is 404."""
        path = path.rstrip("/") or "/"
        groups = {
            GROUP: [RESOURCES["runtimerollouts"], RESOURCES["clusterruntimes"]],
            "authentication.k8s.io": [Resource("selfsubjectreviews", "SelfSubjectReview",
                                               "authentication.k8s.io", "v1", False, "")],
        }
        versions = {GROUP: VERSION, "authentication.k8s.io": "v1"}

        def group_doc(name):
            gv = {"groupVersion": "%s/%s" % (name, versions[name]), "version": versions[name]}
            return {"name": name, "versions": [gv], "preferredVersion": gv}

        if path == "/version":
            return 200, {"major": "1", "minor": "37", "gitVersion": "v1.37.0",
                         "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                         "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
                         "platform": "linux/amd64"}
        if path == "/api":
            return 200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "%s:%d" % (self.host, self.port)}]}
        if path == "/apis":
            return 200, {"kind": "APIGroupList", "apiVersion": "v1",
                         "groups": [group_doc(g) for g in (GROUP, "authentication.k8s.io")]}
        if path == "/api/v1":
            return 200, _resource_list("v1", [RESOURCES["configmaps"]])
        for name, resources in groups.items():
            if path == "/apis/" + name:
                return 200, dict({"kind": "APIGroup", "apiVersion": "v1"}, **group_doc(name))
            if path == "/apis/%s/%s" % (name, versions[name]):
                return 200, _resource_list("%s/%s" % (name, versions[name]), resources)
        raise page_not_found() if path.startswith("/apis/") else path_not_found()


def _resource_list(group_version, resources):
    """An APIResourceList (legacy discovery) for the given resources."""
    entries = []
    for r in resources:
        if r.plural == "selfsubjectreviews":
            entries.append({"name": r.plural, "singularName": "", "namespaced": False,
                            "kind": r.kind, "verbs": ["create"]})
            continue
        verbs = ["get", "list", "patch", "watch"] if r.typed else [
            "delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"]
        entry = {"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                 "kind": r.kind, "verbs": verbs, "shortNames": list(r.short_names)}
        entries.append(entry)
        if not r.typed:
            entries.append({"name": r.plural + "/status", "singularName": "", "namespaced": r.namespaced,
                            "kind": r.kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}


def _json_type(value):
    return {dict: "object", list: "array", str: "string", bool: "bool", type(None): "null"}.get(
        type(value), "number")


def _b64_file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def _write_yaml(path, data):
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, default_flow_style=False, sort_keys=False)
    os.chmod(path, 0o600)
    return path
