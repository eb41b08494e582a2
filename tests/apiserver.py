"""A Kubernetes-shaped HTTPS API server for kubectl-aicr's tests (test-only code).

It serves the objects of docs/operator-api.md from YAML fixtures and
answers the way kube-apiserver answers: the same URLs, the same authentication
order, RBAC-like permissions, RFC 6902 / RFC 7386 patches with the semantics of the
libraries kube-apiserver uses, the operator's admission rules answered as a
ValidatingAdmissionPolicy denial, and ``Status`` bodies whose messages are copied
from the Kubernetes sources cited next to each one.

In-process (pytest)::

    with APIServer(fixtures_dir="tests/fixtures") as server:
        server.url, server.ca_file, server.token("bob@example.com")
        server.write_kubeconfig(path, user="alice@example.com")
        server.requests          # what the client sent, one record per request

As a program (``make demo``), run from the repository root::

    python -m tests.apiserver --fixtures tests/fixtures --dir OUTDIR

prints the URL on its first line and ``export KUBECONFIG=OUTDIR/kubeconfig`` on the
second, and serves until SIGTERM or SIGINT (exit status 0).

Sources (kubernetes/kubernetes unless named otherwise):

- Status errors: ``staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go``
- 403 text: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go``
- request parsing: ``staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``
- patch: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``,
  ``vendor/gopkg.in/evanphx/json-patch.v4/patch.go`` and ``merge.go``
- CR patch types: ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go``
- admission: ``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go``,
  ``staging/src/k8s.io/apiserver/pkg/admission/errors.go``
- selectors: ``staging/src/k8s.io/apimachinery/pkg/labels/selector.go``, ``pkg/fields/selector.go``,
  ``pkg/util/validation/validation.go`` (texts as kube-apiserver v1.20 answers them)

tests/test_contract.py runs the same requests against this server and a real kube-apiserver
(tests/real_apiserver.py) and asserts the same answers.
"""

import argparse
import base64
import copy
import dataclasses
import datetime
import hashlib
import http.server
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import socketserver
import ssl
import struct
import sys
import tempfile
import threading
import traceback
import urllib.parse
import uuid

import yaml

try:  # python -m tests.apiserver, or imported as tests.apiserver
    from . import certs
except ImportError:  # imported as a top-level module (tests/ on sys.path)
    import certs

GROUP = "operator.aicr.run"
VERSION = "v1alpha1"
APPROVERS = "aicr-approvers"
READERS = "aicr-readers"
MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS = "system:anonymous"
OUTCOME_LABEL = "operator.aicr.run/outcome"
FIXTURE_ANNOTATION = "test.aicr.run/fixture"
HUMAN_FIELDS = ("approval", "revocation", "acknowledgements")
ADMIN_USER = "admin"

# kube-apiserver's default --max-request-body-bytes (3 MiB), options/server_run_options.go.
MAX_BODY = 3 * 1024 * 1024

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
# What customresource_handler.go passes to PatchResource for a CR (ServerSideApply is GA).
CR_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
# What this server implements; it answers apply-patch like a server without ServerSideApply.
SERVED_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH)

# The body types a built-in create accepts (the API group's serializers).
CREATE_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")

FAULTS = ("hang", "trickle", "reset", "close-mid-body", "html-500", "redirect", "huge",
          # the request is carried out (a PATCH stored), then its answer is lost: closed with no answer,
          # a TCP RST, or held for fault_hang_seconds and closed
          "store-close", "store-reset", "store-hang", "store-conflict")  # store-conflict: then a 409


def conflict_status_for_fault():
    """The 409 Status of the "store-conflict" fault (the write was stored all the same)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Conflict",
            "message": "Operation cannot be fulfilled: the object has been modified", "code": 409}


# --------------------------------------------------------------------------- resources


@dataclasses.dataclass(frozen=True)
class Resource:
    """One served resource: plural, kind, API group and version, scope, short names."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool
    singular: str
    short_names: tuple = ()
    typed: bool = False  # a built-in type (list items carry no kind/apiVersion)

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    @property
    def group_resource(self):
        """``schema.GroupResource.String()``: ``plural.group``, or ``plural`` for the core group."""
        return "%s.%s" % (self.plural, self.group) if self.group else self.plural


RESOURCES = {
    "runtimerollouts": Resource("runtimerollouts", "RuntimeRollout", GROUP, VERSION, False,
                                "runtimerollout", ("aicrro",)),
    "clusterruntimes": Resource("clusterruntimes", "ClusterRuntime", GROUP, VERSION, False,
                                "clusterruntime", ("aicrrt",)),
    "configmaps": Resource("configmaps", "ConfigMap", "", "v1", True, "configmap", ("cm",), True),
}
SERVED_GROUP_VERSIONS = {("", "v1"), (GROUP, VERSION), ("authentication.k8s.io", "v1")}


def resource_for(kind):
    """Return the :class:`Resource` for a kind or plural (``"RuntimeRollout"``, ``"configmaps"``)."""
    for r in RESOURCES.values():
        if kind.lower() in (r.plural, r.kind.lower(), r.singular) or kind in r.short_names:
            return r
    raise KeyError("unknown kind %r" % kind)


# --------------------------------------------------------------------------- Status errors


def go_quote(s):
    """Go's ``%q`` for the plain strings used here (a JSON string literal)."""
    return json.dumps(s, ensure_ascii=False)


def status(code, reason, message, details=None):
    """A ``metav1.Status`` failure, keys in kube's order; ``details`` omitted when None."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason}
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


def details(name="", group="", kind="", causes=None):
    """``metav1.StatusDetails`` with its ``omitempty`` fields left out when empty."""
    d = {k: v for k, v in (("name", name), ("group", group), ("kind", kind)) if v}
    if causes:
        d["causes"] = causes
    return d


class APIError(Exception):
    """An error answered as a Status: ``code`` (int) and ``status`` (dict)."""

    def __init__(self, body):
        super().__init__(body["message"])
        self.status = body
        self.code = body["code"]


def unauthorized():
    """401 as the authentication filter writes it: ``apierrors.NewUnauthorized("Unauthorized")``."""
    return APIError(status(401, "Unauthorized", "Unauthorized"))


def forbidden(res_group, res_plural, name, reason_text):
    """403 ``apierrors.NewForbidden``: ``<resource>.<group> "<name>" is forbidden: <reason>``."""
    gr = "%s.%s" % (res_plural, res_group) if res_group else res_plural
    if not res_plural and not res_group:
        message = "forbidden: %s" % reason_text
    elif not name:
        message = "%s is forbidden: %s" % (gr, reason_text)
    else:
        message = "%s %s is forbidden: %s" % (gr, go_quote(name), reason_text)
    return APIError(status(403, "Forbidden", message, details(name, res_group, res_plural)))


def forbidden_message(username, attrs):
    """``forbiddenMessage`` in responsewriters/errors.go (User "u" cannot VERB resource ...)."""
    if not attrs.resource_request:
        return "User %s cannot %s path %s" % (go_quote(username), attrs.verb, go_quote(attrs.path))
    resource = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
    if attrs.namespace:
        return "User %s cannot %s resource %s in API group %s in the namespace %s" % (
            go_quote(username), attrs.verb, go_quote(resource), go_quote(attrs.api_group),
            go_quote(attrs.namespace))
    return "User %s cannot %s resource %s in API group %s at the cluster scope" % (
        go_quote(username), attrs.verb, go_quote(resource), go_quote(attrs.api_group))


def not_found(res, name):
    """404 ``apierrors.NewNotFound``: ``runtimerollouts.operator.aicr.run "x" not found``."""
    return APIError(status(404, "NotFound", "%s %s not found" % (res.group_resource, go_quote(name)),
                           details(name, res.group, res.plural)))


def path_not_found():
    """404 ``NewGenericServerResponse(404, ...)``: the message for an unknown path in a built-in
    API (``/api/...``, ``/apis/authentication.k8s.io/v1/...``); empty details."""
    return APIError(status(404, "NotFound", "the server could not find the requested resource", {}))


class TextError(Exception):
    """An error answered with a plain-text body, not a Status: ``code`` (int) and ``text``."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code, self.text = code, text


def page_not_found():
    """404 as Go's ``http.NotFound`` writes it (text/plain ``404 page not found``): what
    kube-apiserver answers for a path under ``/apis`` that no API serves: an unknown group or
    version, a resource no CRD defines, a namespaced path to a cluster-scoped custom resource
    (the apiextensions handler delegates them to the not-found handler)."""
    return TextError(404, "404 page not found\n")


def bad_request(message):
    """400 ``apierrors.NewBadRequest(message)``."""
    return APIError(status(400, "BadRequest", message))


def conflict(res, name):
    """409 ``apierrors.NewConflict`` with storage's OptimisticLockErrorMsg."""
    return APIError(status(409, "Conflict", (
        "Operation cannot be fulfilled on %s %s: the object has been modified; please apply "
        "your changes to the latest version and try again") % (res.group_resource, go_quote(name)),
        details(name, res.group, res.plural)))


def patch_failed():
    """422 for a JSON patch that does not apply (failed ``test``, bad path): patch.go wraps the
    json-patch error in ``NewGenericServerResponse(422, ...)``, which keeps only its generic text."""
    return APIError(status(422, "Invalid",
                           "the server rejected our request due to an error in our request", {}))


def unsupported_media_type(accepted):
    """415 ``negotiation.NewUnsupportedMediaTypeError`` (handlers/negotiation/errors.go)."""
    return APIError(status(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: " + ", ".join(accepted)))


def too_large(limit):
    """413 ``NewRequestEntityTooLargeError("limit is N")`` from limitedReadBody (handlers/rest.go)."""
    return APIError(status(413, "RequestEntityTooLarge",
                           "Request entity too large: limit is %d" % limit))


def method_not_supported(res, verb):
    """405 ``apierrors.NewMethodNotSupported``: ``<verb> is not supported on resources of kind "..."``."""
    return APIError(status(405, "MethodNotAllowed", "%s is not supported on resources of kind %s" % (
        verb, go_quote(res.group_resource)), details(group=res.group, kind=res.plural)))


def method_not_allowed():
    """405 from go-restful, for a method the resource has no route for (a create-only resource
    such as selfsubjectreviews): a Status with a generic message and empty details."""
    return APIError(status(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource", {}))


def field_invalid(res, name, field, value, detail):
    """422 ``apierrors.NewInvalid`` with one ``field.Invalid`` error."""
    body = 'Invalid value: %s: %s' % (go_quote(value), detail)
    kind = "%s.%s" % (res.kind, res.group) if res.group else res.kind
    return APIError(status(422, "Invalid", "%s %s is invalid: %s: %s" % (kind, go_quote(name), field, body),
                           details(name, res.group, res.kind, [
                               {"reason": "FieldValueInvalid", "message": body, "field": field}])))


def policy_denied(res, name, policy, binding, message):
    """422 as dispatcher.go answers a ValidatingAdmissionPolicy denial (no reason set): the
    message wrapped by ``admission.NewForbidden``, reason Invalid, and one cause."""
    denial = "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s" % (
        policy, binding, message)
    return APIError(status(422, "Invalid", "%s %s is forbidden: %s" % (
        res.group_resource, go_quote(name), denial),
        details(name, res.group, res.plural, [{"message": denial}])))


# --------------------------------------------------------------------------- users and RBAC


@dataclasses.dataclass
class User:
    """A configured user: name, groups (without system:authenticated), uid, and credentials.

    The server keeps its own copy: ``token`` (when None) becomes a random value and ``uid``
    (when empty) a UUID derived from the name; ``password`` enables
    basic auth for the user when the server has ``basic_auth=True``; ``cert`` says that a
    client certificate (CN=name, O=groups) is made at start.
    """

    name: str
    groups: tuple = ()
    uid: str = ""
    token: str = None
    password: str = None
    cert: bool = False

    @property
    def short(self):
        """Context name: the part before ``@`` (``alice``), or the whole name."""
        return self.name.split("@")[0]


def default_users():
    """The default users: alice (approver, client cert), bob (approver), carol (reader),
    mallory (no rights), approver-01..approver-20 (approvers) and admin (system:masters).
    Every user also gets a random bearer token at start."""
    users = [
        User("alice@example.com", (APPROVERS,), cert=True),
        User("bob@example.com", (APPROVERS,)),
        User("carol@example.com", (READERS,)),
        User("mallory@example.com", ()),
        User("admin", (MASTERS,)),
    ]
    return users + [User("approver-%02d" % i, (APPROVERS,)) for i in range(1, 21)]


@dataclasses.dataclass
class UserInfo:
    """An authenticated identity (``user.Info``): name, uid, groups, extra."""

    name: str
    groups: list
    uid: str = ""
    extra: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Attributes:
    """Authorization attributes (``authorizer.AttributesRecord``), from :func:`request_info`."""

    verb: str
    path: str
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple = ()


def request_info(method, path, query):
    """Parse a request the way ``RequestInfoFactory.NewRequestInfo`` does (requestinfo.go).

    ``/api/v1/...`` and ``/apis/<group>/<version>/...`` with a resource are resource
    requests; everything else (discovery, /version) is a non-resource request.
    """
    verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
            "DELETE": "delete"}.get(method, method.lower())
    nonresource = Attributes(verb={"create": "post", "update": "put"}.get(verb, verb), path=path)
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return nonresource
    attrs = Attributes(verb=verb, path=path, resource_request=True)
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return nonresource
        attrs.api_group, rest = rest[0], rest[1:]
    attrs.api_version, rest = rest[0], rest[1:]
    if rest[0] == "namespaces" and len(rest) > 1:
        attrs.namespace = rest[1]
        if len(rest) > 2:
            rest = rest[2:]
    attrs.parts = tuple(rest)
    if len(rest) >= 3:
        attrs.subresource = rest[2]
    if len(rest) >= 2:
        attrs.name = rest[1]
    attrs.resource = rest[0]
    if not attrs.name and verb == "get":
        attrs.verb = "watch" if query.get("watch", [""])[0] in ("true", "1") else "list"
    if not attrs.name and verb == "delete":
        attrs.verb = "deletecollection"
    return attrs


@dataclasses.dataclass(frozen=True)
class Grant:
    """One RBAC rule bound to groups: verbs on (api groups, resources) in ``namespace``
    (None: a ClusterRoleBinding, every namespace and the cluster scope), or on
    non-resource URLs (a trailing ``*`` matches a prefix)."""

    groups: frozenset
    verbs: frozenset
    api_groups: frozenset = frozenset()
    resources: frozenset = frozenset()
    namespace: str = None
    urls: tuple = ()

    def allows(self, user, attrs):
        if not self.groups.intersection(user.groups):
            return False
        if "*" not in self.verbs and attrs.verb not in self.verbs:
            return False
        if not attrs.resource_request:
            return any(u == "*" or u == attrs.path or (u.endswith("*") and attrs.path.startswith(u[:-1]))
                       for u in self.urls)
        resource = attrs.resource + ("/" + attrs.subresource if attrs.subresource else "")
        return (("*" in self.api_groups or attrs.api_group in self.api_groups)
                and ("*" in self.resources or resource in self.resources)
                and (self.namespace is None or self.namespace == attrs.namespace))


def default_grants(operator_namespace):
    """The chart's roles as RBAC grants (operator-api.md rule 5) plus kube's defaults:
    system:basic-user (self reviews), system:discovery, system:public-info-viewer, and
    cluster-admin for system:masters (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go)."""
    f = frozenset
    discovery = ("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
                 "/version", "/version/", "/openapi", "/openapi/*")
    public = ("/healthz", "/livez", "/readyz", "/version", "/version/")
    return [
        Grant(f({APPROVERS, READERS}), f({"get", "list", "watch"}), f({GROUP}),
              f({"runtimerollouts", "clusterruntimes"})),
        Grant(f({APPROVERS}), f({"patch"}), f({GROUP}), f({"runtimerollouts"})),
        Grant(f({APPROVERS, READERS}), f({"get", "list", "watch"}), f({""}), f({"configmaps"}),
              namespace=operator_namespace),
        Grant(f({AUTHENTICATED}), f({"create"}), f({"authentication.k8s.io"}), f({"selfsubjectreviews"})),
        Grant(f({AUTHENTICATED}), f({"create"}), f({"authorization.k8s.io"}),
              f({"selfsubjectaccessreviews", "selfsubjectrulesreviews"})),
        Grant(f({AUTHENTICATED}), f({"get"}), urls=discovery),
        Grant(f({AUTHENTICATED, UNAUTHENTICATED}), f({"get"}), urls=public),
        Grant(f({MASTERS}), f({"*"}), f({"*"}), f({"*"}), urls=("*",)),
    ]


# --------------------------------------------------------------------------- fixtures


class _FixtureLoader(yaml.SafeLoader):
    """PyYAML's safe loader without the timestamp resolver: times stay strings."""


_FixtureLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def format_time(dt):
    """RFC 3339, UTC, seconds precision: ``2026-11-30T12:00:00Z``."""
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_now():
    """The current time in UTC, truncated to seconds."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def sha256_digest(data):
    """``sha256:<64 lowercase hex>`` of bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


_NOW = re.compile(r"^now(?:([+-])((?:\d+[hms])+))?$")


def resolve_placeholder(value, base_dir, now):
    """Resolve one fixture string; strings that are not placeholders come back unchanged.

    - ``@now``, ``@now+2h``, ``@now-30m``, ``@now+1h30m`` -> RFC 3339 UTC time
    - ``@file:PATH`` -> the text of ``base_dir/PATH`` (exact bytes, UTF-8)
    - ``@sha256:PATH`` -> ``sha256:<hex>`` of that file's bytes
    - ``@assessment-name:PATH`` -> ``aicr-assessment-<first 16 hex of @sha256:PATH>``
    - ``@digest:WORD`` -> ``sha256:<hex>`` of the word: a stable made-up digest
    - ``@plan-name:WORD`` -> ``aicr-plan-<first 16 hex of @digest:WORD>``
    - ``@rollout-name:WORD:N`` -> ``rollout-<first 16 hex of @digest:WORD>-N``
    - ``@@...`` -> the literal string ``@...``
    """
    if not isinstance(value, str) or not value.startswith("@"):
        return value
    if value.startswith("@@"):
        return value[1:]
    head, _, arg = value[1:].partition(":")

    def file_bytes(rel):
        with open(os.path.join(base_dir, rel), "rb") as f:
            return f.read()

    m = _NOW.match(value[1:])
    if m:
        delta = datetime.timedelta()
        for amount, unit in re.findall(r"(\d+)([hms])", m.group(2) or ""):
            delta += datetime.timedelta(**{{"h": "hours", "m": "minutes", "s": "seconds"}[unit]: int(amount)})
        return format_time(now - delta if m.group(1) == "-" else now + delta)
    if head == "file":
        return file_bytes(arg).decode("utf-8")
    if head == "sha256":
        return sha256_digest(file_bytes(arg))
    if head == "assessment-name":
        return "aicr-assessment-" + hashlib.sha256(file_bytes(arg)).hexdigest()[:16]
    if head == "digest":
        return sha256_digest(arg.encode("utf-8"))
    if head == "plan-name":
        return "aicr-plan-" + hashlib.sha256(arg.encode("utf-8")).hexdigest()[:16]
    if head == "rollout-name":
        word, _, attempt = arg.rpartition(":")
        return "rollout-%s-%s" % (hashlib.sha256(word.encode("utf-8")).hexdigest()[:16], attempt)
    raise ValueError("unknown fixture placeholder %r" % value)


def resolve(value, base_dir, now):
    """Resolve placeholders in every string of a YAML value (dicts, lists, scalars)."""
    if isinstance(value, dict):
        return {k: resolve(v, base_dir, now) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, base_dir, now) for v in value]
    return resolve_placeholder(value, base_dir, now)


def load_fixtures(fixtures_dir, now=None):
    """Read every ``*.yaml`` in ``fixtures_dir`` (multi-document) and resolve placeholders.

    Returns a list of object dicts in file order (files sorted by name).
    """
    now = now or utc_now()
    objects = []
    for name in sorted(os.listdir(fixtures_dir)):
        if not name.endswith((".yaml", ".yml")):
            continue
        with open(os.path.join(fixtures_dir, name), encoding="utf-8") as f:
            for doc in yaml.load_all(f, Loader=_FixtureLoader):
                if doc:
                    objects.append(resolve(doc, fixtures_dir, now))
    return objects


# --------------------------------------------------------------------------- selectors
#
# Label selectors: the lexer and recursive-descent parser of
# ``k8s.io/apimachinery/pkg/labels/selector.go`` with the error texts kube-apiserver
# v1.20 answers (checked against one by tests/test_contract.py); key and value checks of
# ``pkg/util/validation/validation.go`` (IsQualifiedName, IsValidLabelValue). Field
# selectors: ``pkg/fields/selector.go`` (splitTerms, splitTerm, UnescapeValue) and the field
# label check of the resource (core types vs custom resources).

_LS_SPECIAL = "=!(),><"
_LS_WHITESPACE = " \t\r\n"
_LS_TOKENS = {")": "closepar", ",": "comma", "!": "not", "==": "eqeq", "=": "eq", ">": "gt", "in": "in",
              "<": "lt", "!=": "neq", "notin": "notin", "(": "openpar"}
_QNAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
                    "'.', and must start and end with an alphanumeric character")


def _regex_error(msg, fmt, *examples):
    """``validation.RegexError`` (its odd ``'x',  or 'y', `` spacing included)."""
    if not examples:
        return "%s (regex used for validation is '%s')" % (msg, fmt)
    return "%s (e.g. %sregex used for validation is '%s')" % (
        msg, " or ".join("'%s', " % e for e in examples), fmt)


def _qualified_name_errors(value):
    """``validation.IsQualifiedName``: a list of error texts (empty when valid)."""
    errs = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errs.append("prefix part must be no more than 253 characters")
            if not _DNS1123_SUBDOMAIN.match(prefix):
                errs.append("prefix part " + _regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT,
                                                          "example.com"))
    else:
        return ["a qualified name " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME.match(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def _label_value_errors(value):
    """``validation.IsValidLabelValue``."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _go_int64(text):
    """``strconv.ParseInt(text, 10, 64)``, or None."""
    if not re.match(r"^[+-]?[0-9]+$", text):
        return None
    value = int(text)
    return value if -2 ** 63 <= value < 2 ** 63 else None


class _SelectorError(Exception):
    pass


def _lex_label_selector(text):
    """The token list of ``Lexer.Lex`` until the end of the string: [(kind, literal)]."""
    items, pos, n = [], 0, len(text)
    while True:
        while pos < n and text[pos] in _LS_WHITESPACE:
            pos += 1
        if pos >= n:
            items.append(("end", ""))
            return items
        if text[pos] in _LS_SPECIAL:
            buffer, last = "", None
            while pos < n and text[pos] in _LS_SPECIAL:
                buffer += text[pos]
                if buffer in _LS_TOKENS:
                    last = (_LS_TOKENS[buffer], buffer)
                    pos += 1
                elif last is not None:
                    break
                else:
                    pos += 1
            items.append(last or ("error", "error expected: keyword found '%s'" % buffer))
        else:
            start = pos
            while pos < n and text[pos] not in _LS_SPECIAL and text[pos] not in _LS_WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_LS_TOKENS.get(word, "id"), word))


class _LabelSelectorParser:
    """``labels.Parser``: ``parse`` returns [(key, op, values)] or raises _SelectorError."""

    def __init__(self, text):
        self.items = _lex_label_selector(text)
        self.position = 0

    def lookahead(self, values_context):
        kind, literal = self.items[self.position]
        if values_context and kind in ("in", "notin"):
            kind = "id"
        return kind, literal

    def consume(self, values_context):
        self.position += 1
        kind, literal = self.items[self.position - 1]
        if values_context and kind in ("in", "notin"):
            kind = "id"
        return kind, literal

    def parse(self):
        requirements = []
        while True:
            kind, literal = self.lookahead(True)
            if kind in ("id", "not"):
                try:
                    requirements.append(self.requirement())
                except _SelectorError as e:
                    raise _SelectorError("unable to parse requirement: %s" % e)
                kind, literal = self.consume(True)
                if kind == "end":
                    return requirements
                if kind == "comma":
                    kind2, literal2 = self.lookahead(True)
                    if kind2 not in ("id", "not"):
                        raise _SelectorError("found '%s', expected: identifier after ','" % literal2)
                else:
                    raise _SelectorError("found '%s', expected: ',' or 'end of string'" % literal)
            elif kind == "end":
                return requirements
            else:
                raise _SelectorError("found '%s', expected: !, identifier, or 'end of string'" % literal)

    def requirement(self):
        key, op = self.key_and_operator()
        if op in ("exists", "!"):
            return self.new_requirement(key, op, ())
        op = self.operator()
        values = self.values() if op in ("in", "notin") else self.exact_value()
        return self.new_requirement(key, op, tuple(sorted(values)))

    def key_and_operator(self):
        op = None
        kind, literal = self.consume(True)
        if kind == "not":
            op = "!"
            kind, literal = self.consume(True)
        if kind != "id":
            raise _SelectorError("found '%s', expected: identifier" % literal)
        self.check_key(literal)
        if self.lookahead(True)[0] in ("end", "comma") and op != "!":
            op = "exists"
        return literal, op

    def operator(self):
        kind, literal = self.consume(False)
        ops = {"in": "in", "eq": "=", "eqeq": "=", "gt": ">", "lt": "<", "notin": "notin", "neq": "!="}
        if kind not in ops:
            raise _SelectorError("found '%s', expected: '=', '!=', '==', 'in', notin'" % literal)
        return ops[kind]

    def values(self):
        kind, literal = self.consume(True)
        if kind != "openpar":
            raise _SelectorError("found '%s' expected: '('" % literal)
        kind, literal = self.lookahead(True)
        if kind in ("id", "comma"):
            found = self.identifiers()
            if self.consume(True)[0] != "closepar":
                raise _SelectorError("found '%s', expected: ')'" % literal)
            return found
        if kind == "closepar":
            self.consume(True)
            return {""}
        raise _SelectorError("found '%s', expected: ',', ')' or identifier" % literal)

    def identifiers(self):
        found = set()
        while True:
            kind, literal = self.consume(True)
            if kind == "id":
                found.add(literal)
                kind2, literal2 = self.lookahead(True)
                if kind2 == "comma":
                    continue
                if kind2 == "closepar":
                    return found
                raise _SelectorError("found '%s', expected: ',' or ')'" % literal2)
            if kind == "comma":
                if not found:
                    found.add("")
                kind2 = self.lookahead(True)[0]
                if kind2 == "closepar":
                    found.add("")
                    return found
                if kind2 == "comma":
                    self.consume(True)
                    found.add("")
            else:
                raise _SelectorError("found '%s', expected: ',', or identifier" % literal)

    def exact_value(self):
        if self.lookahead(True)[0] in ("end", "comma"):
            return {""}
        kind, literal = self.consume(True)
        if kind == "id":
            return {literal}
        raise _SelectorError("found '%s', expected: identifier" % literal)

    @staticmethod
    def check_key(key):
        errs = _qualified_name_errors(key)
        if errs:
            raise _SelectorError("invalid label key %s: %s" % (go_quote(key), "; ".join(errs)))

    def new_requirement(self, key, op, values):
        """``NewRequirement``: the checks of v1.20, in its order."""
        self.check_key(key)
        if op in ("in", "notin") and not values:
            raise _SelectorError("for 'in', 'notin' operators, values set can't be empty")
        if op in ("=", "!=") and len(values) != 1:
            raise _SelectorError("exact-match compatibility requires one single value")
        if op in (">", "<"):
            if len(values) != 1:
                raise _SelectorError("for 'Gt', 'Lt' operators, exactly one value is required")
            if any(_go_int64(v) is None for v in values):
                raise _SelectorError("for 'Gt', 'Lt' operators, the value must be an integer")
        for value in values:
            errs = _label_value_errors(value)
            if errs:
                raise _SelectorError("invalid label value: %s: at key: %s: %s" % (
                    go_quote(value), go_quote(key), "; ".join(errs)))
        return key, op, values


def parse_label_selector(text):
    """Parse a label selector (``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``,
    ``k notin (a,b)``, ``k>1``, ``k<1``) into ``[(key, op, values)]`` with op one of ``=``,
    ``!=``, ``in``, ``notin``, ``exists``, ``!``, ``>``, ``<``; raises :class:`APIError` 400
    with kube-apiserver's message (``labels.Parse``)."""
    try:
        return sorted(_LabelSelectorParser(text or "").parse(), key=lambda r: r[0])
    except _SelectorError as e:
        raise bad_request(str(e))


def labels_match(labels, reqs):
    """True if ``labels`` (dict) satisfies every requirement (``Requirement.Matches``):
    ``!=``/``notin`` match an absent key; ``>``/``<`` need an integer label value."""
    for key, op, values in reqs:
        present = key in labels
        if op in ("=", "in") and (not present or labels[key] not in values):
            return False
        if op in ("!=", "notin") and present and labels[key] in values:
            return False
        if op == "exists" and not present:
            return False
        if op == "!" and present:
            return False
        if op in (">", "<"):
            have = _go_int64(labels[key]) if present else None
            want = _go_int64(values[0])
            if have is None or want is None or not (have > want if op == ">" else have < want):
                return False
    return True


def _split_field_terms(text):
    """``fields.splitTerms``: split on commas not escaped by a backslash (kept as they are)."""
    if not text:
        return []
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(text):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _unescape_field_value(value):
    """``fields.UnescapeValue``."""
    out, in_slash = [], False
    for c in value:
        if in_slash:
            if c not in "\\,=":
                raise bad_request("invalid field selector: invalid escape sequence: \\" + c)
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise bad_request("invalid field selector: unescaped character in value: %d" % ord(c))
        else:
            out.append(c)
    if in_slash:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def parse_field_selector(text, res=None):
    """Parse a field selector as ``fields.ParseSelector`` does, then check each field label as
    the resource's conversion does (``metadata.name``; ``metadata.namespace`` only where the
    resource is namespaced or built in) -> ``[(field, op, value)]`` with field ``name`` or
    ``namespace`` and op ``=`` or ``!=``; raises :class:`APIError` 400."""
    terms = []
    for part in sorted(_split_field_terms(text or "")):
        if not part:
            continue
        for i in range(len(part)):
            op = next((o for o in ("!=", "==", "=") if part.startswith(o, i)), None)
            if op:
                terms.append((part[:i], "!=" if op == "!=" else "=", _unescape_field_value(part[i + len(op):])))
                break
        else:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, part))
    custom = res is not None and not res.typed
    for field, _, _ in terms:
        allowed = ("metadata.name", "metadata.namespace") if not custom or res.namespaced else ("metadata.name",)
        if field not in allowed:
            if custom:
                raise bad_request("field label not supported: %s" % field)
            raise bad_request('%s is not a known field selector: only "metadata.name", "metadata.namespace"'
                              % go_quote(field))
    return [(field.split(".")[1], op, value) for field, op, value in terms]


# --------------------------------------------------------------------------- patches


class PatchError(Exception):
    """A JSON patch that does not apply (answered 422 by :func:`patch_failed`)."""


def _pointer_tokens(path):
    # findObject splits on "/" and decodes each token (~1 -> /, ~0 -> ~)
    return [t.replace("~1", "/").replace("~0", "~") for t in path.split("/")]


def _index(key, length, for_add=False):
    """strconv.Atoi of an array index; negative indices count from the end (json-patch v4)."""
    if for_add and key == "-":
        return length
    if not re.match(r"^[+-]?\d+$", key):
        raise PatchError("value was not a proper array index: %r" % key)
    idx, size = int(key), length + (1 if for_add else 0)
    if idx < 0:
        if idx < -size:
            raise PatchError("Unable to access invalid index: %d" % idx)
        idx += size
    if idx >= size:
        raise PatchError("Unable to access invalid index: %d" % idx)
    return idx


def _find_container(doc, path):
    """``findObject``: the container holding the last token, and that token."""
    tokens = _pointer_tokens(path)
    if len(tokens) < 2:
        raise PatchError("doc is missing path: %r" % path)
    node = doc
    for token in tokens[1:-1]:
        node = _get(node, token)
        if not isinstance(node, (dict, list)):
            raise PatchError("doc is missing path: %r" % path)
    return node, tokens[-1]


def _get(container, key):
    # partialDoc.get never fails (a missing key is nil); partialArray.get checks the index
    if isinstance(container, dict):
        return container.get(key)
    return container[_index(key, len(container))]


def _add(container, key, value):
    if isinstance(container, dict):
        container[key] = value
    else:
        container.insert(_index(key, len(container), for_add=True), value)


def _remove(container, key):
    if isinstance(container, dict):
        if key not in container:
            raise PatchError("Unable to remove nonexistent key: %s" % key)
        del container[key]
    else:
        del container[_index(key, len(container))]


def json_equal(a, b):
    """Structural equality of two decoded JSON values (bool is not a number, 1 is not 1.0)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def apply_json_patch(doc, operations):
    """Apply an RFC 6902 patch as ``gopkg.in/evanphx/json-patch.v4`` (kube-apiserver's) does.

    ``doc``: decoded JSON object; ``operations``: decoded list of operation objects.
    Returns the patched copy; raises :class:`PatchError`. Quirks kept on purpose: a
    ``test`` whose value is null (or absent) succeeds on an absent key; ``replace`` of an
    absent object key adds it; ``copy`` from an absent object key copies null; negative
    array indices count from the end.
    """
    doc = copy.deepcopy(doc)
    for op in operations:
        op = op if isinstance(op, dict) else {}
        kind = op.get("op") if isinstance(op.get("op"), str) else "unknown"
        path = op.get("path")
        if kind not in ("add", "remove", "replace", "move", "copy", "test"):
            raise PatchError("Unexpected kind: %s" % kind)
        if not isinstance(path, str):
            raise PatchError("operation missing path field")
        value = op.get("value")
        if kind == "test" and path == "":
            if not json_equal(doc, value):
                raise PatchError("testing value %s failed" % path)
            continue
        if kind == "replace" and path == "":
            if not isinstance(value, (dict, list)):
                raise PatchError("replace operation value must be object or array")
            doc = copy.deepcopy(value)
            continue
        if kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise PatchError("operation, missing from field")
            container, key = _find_container(doc, source)
            moved = _get(container, key)
            if kind == "move":
                _remove(container, key)
            else:
                moved = copy.deepcopy(moved)
            container, key = _find_container(doc, path)
            _add(container, key, moved)
            continue
        container, key = _find_container(doc, path)
        if kind == "add":
            _add(container, key, copy.deepcopy(value))
        elif kind == "remove":
            _remove(container, key)
        elif kind == "replace":
            if isinstance(container, dict):
                container[key] = copy.deepcopy(value)
            else:
                container[_index(key, len(container))] = copy.deepcopy(value)
        else:  # test
            current = _get(container, key)
            if current is None:
                if value is not None:
                    raise PatchError("testing value %s failed" % path)
            elif "value" not in op or not json_equal(current, value):
                raise PatchError("testing value %s failed" % path)
    return doc


def _prune_nulls(value):
    # json-patch v4 merge.go pruneNulls: drop null members of objects, recursively
    if isinstance(value, dict):
        return {k: _prune_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_prune_nulls(v) if v is not None else None for v in value]
    return value


def apply_merge_patch(target, patch):
    """RFC 7386 merge patch as json-patch v4 ``MergePatch`` applies it: null removes a
    member, objects merge, anything else (arrays included) replaces. Returns a new value."""
    if not isinstance(target, dict):
        return _prune_nulls(copy.deepcopy(patch))
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif result.get(key) is None:
            result[key] = _prune_nulls(copy.deepcopy(value))
        else:
            result[key] = apply_merge_patch(result[key], value)
    return result


# --------------------------------------------------------------------------- admission


POLICIES = {
    "approval": "aicr-rollout-approval",
    "revocation": "aicr-rollout-revocation",
    "acknowledgements": "aicr-rollout-acknowledgements",
    "immutable": "aicr-rollout-immutable",
}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def is_rfc3339(value):
    """True for an RFC 3339 date-time string with a real date and time."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


class Denied(Exception):
    """An admission denial: ``policy`` key (see :data:`POLICIES`) and message."""

    def __init__(self, policy, message):
        super().__init__(message)
        self.policy = policy
        self.message = message


def _spec(obj):
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


def _labels(obj):
    labels = (obj.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _status(obj):
    st = obj.get("status")
    return st if isinstance(st, dict) else {}


def has_ended(obj):
    """A rollout has ended when it carries an outcome (label or status.outcome)."""
    return bool(_labels(obj).get(OUTCOME_LABEL) or _status(obj).get("outcome"))


def check_rollout_update(old, new, username):
    """The operator's admission rules on an update (operator-api.md "What the API server
    enforces", rules 1-4), on the object before and after the patch and the requesting
    user. Raises :class:`Denied` for the first policy that refuses; returns None."""
    old_spec, new_spec = _spec(old), _spec(new)
    quoted = go_quote(username)

    # 1. spec.approval: added once, never changed or removed; user, reason, expires.
    old_a, new_a = old_spec.get("approval"), new_spec.get("approval")
    if old_a is not None and not json_equal(old_a, new_a):
        raise Denied("approval", "spec.approval is set once and cannot be changed or removed")
    if old_a is None and new_a is not None:
        new_a = new_a if isinstance(new_a, dict) else {}
        if new_a.get("user") != username:
            raise Denied("approval", "spec.approval.user must be the requesting user %s" % quoted)
        reason = new_a.get("reason")
        if not isinstance(reason, str) or not 1 <= len(reason) <= 1024:
            raise Denied("approval", "spec.approval.reason must be 1 to 1024 characters")
        if not is_rfc3339(new_a.get("expires")):
            raise Denied("approval", "spec.approval.expires must be an RFC 3339 time")

    # 2. spec.revocation: added once, only where approved, not while Validating or ended.
    old_r, new_r = old_spec.get("revocation"), new_spec.get("revocation")
    if old_r is not None and not json_equal(old_r, new_r):
        raise Denied("revocation", "spec.revocation is set once and cannot be changed or removed")
    if old_r is None and new_r is not None:
        if new_spec.get("approval") is None:
            raise Denied("revocation", "spec.revocation requires spec.approval")
        if _status(old).get("phase") == "Validating":
            raise Denied("revocation", "spec.revocation cannot be set while status.phase is Validating")
        if has_ended(old):
            raise Denied("revocation", "spec.revocation cannot be set after the rollout has ended")
        if not isinstance(new_r, dict) or new_r.get("user") != username:
            raise Denied("revocation", "spec.revocation.user must be the requesting user %s" % quoted)

    # 3. spec.acknowledgements: append-only; new entries name the awaited release and the user.
    old_k = old_spec.get("acknowledgements") or []
    new_k = new_spec.get("acknowledgements") or []
    if not isinstance(new_k, list) or len(new_k) < len(old_k) or not json_equal(new_k[:len(old_k)], old_k):
        raise Denied("acknowledgements", "spec.acknowledgements is append-only")
    awaited = (_status(old).get("awaitingAcknowledgement") or {}).get("release")
    for entry in new_k[len(old_k):]:
        entry = entry if isinstance(entry, dict) else {}
        if not awaited:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry needs a release "
                                             "in status.awaitingAcknowledgement, and there is none")
        if entry.get("release") != awaited:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry must name the "
                                             "release in status.awaitingAcknowledgement (%s)" % go_quote(awaited))
        if entry.get("user") != username:
            raise Denied("acknowledgements", "a new spec.acknowledgements entry must name the "
                                             "requesting user %s" % quoted)

    # 4. Every other spec field and the outcome label are immutable.
    for key in sorted(set(old_spec) | set(new_spec)):
        if key not in HUMAN_FIELDS and not json_equal(old_spec.get(key), new_spec.get(key)):
            raise Denied("immutable", "spec.%s is immutable" % key)
    if _labels(old).get(OUTCOME_LABEL) != _labels(new).get(OUTCOME_LABEL):
        raise Denied("immutable", "the label %s is immutable" % OUTCOME_LABEL)


# --------------------------------------------------------------------------- store


class Store:
    """The objects, keyed by (plural, namespace, name), and a global resourceVersion counter.

    ``lock`` (re-entrant) serialises every read-modify-write; each write bumps the counter
    and stamps the object with it, as etcd's revision does.
    """

    def __init__(self, first_rv=1000):
        self.lock = threading.RLock()
        self.rv = first_rv
        self.objects = {}

    def put(self, obj, now):
        """Store a copy of ``obj``, filling uid, creationTimestamp (and generation for CRs);
        returns a copy with the new resourceVersion."""
        obj = copy.deepcopy(obj)
        res = resource_for(obj.get("kind", ""))
        obj["apiVersion"] = obj.get("apiVersion") or res.api_version
        meta = obj.setdefault("metadata", {})
        name, namespace = meta.get("name", ""), meta.get("namespace", "") if res.namespaced else ""
        if not name or (res.namespaced and not namespace):
            raise ValueError("object %s needs metadata.name%s" % (res.kind, " and namespace" if res.namespaced else ""))
        if not res.namespaced:
            meta.pop("namespace", None)
        meta.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s/%s" % (res.plural, namespace, name))))
        meta.setdefault("creationTimestamp", format_time(now))
        if not res.typed:
            meta.setdefault("generation", 1)
        with self.lock:
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self.objects[(res.plural, namespace, name)] = obj
            return copy.deepcopy(obj)

    def get(self, plural, namespace, name):
        with self.lock:
            obj = self.objects.get((plural, namespace or "", name))
            return copy.deepcopy(obj) if obj is not None else None

    def delete(self, plural, namespace, name):
        with self.lock:
            return self.objects.pop((plural, namespace or "", name), None) is not None

    def list(self, plural, namespace=None):
        """Copies of the objects of one resource, in key order (namespace, name), and the
        current resourceVersion."""
        with self.lock:
            items = [copy.deepcopy(o) for (p, ns, _), o in sorted(self.objects.items())
                     if p == plural and (namespace is None or ns == namespace)]
            return items, str(self.rv)


# --------------------------------------------------------------------------- HTTP plumbing


@dataclasses.dataclass
class RequestRecord:
    """What one request carried, as :attr:`APIServer.requests` lists it."""

    method: str
    path: str
    query: str
    content_type: str
    authorization: str
    client_cert: dict  # {"cn": str, "o": [str]} of a verified client certificate, or None
    sni: str
    connection_id: int
    user_agent: str
    impersonation: dict  # header name -> list of values, for Impersonate-* headers
    headers: list  # [(name, value)] as received
    body: bytes = b""
    user: str = None  # the authenticated username (after impersonation), None if refused
    status: int = None  # HTTP status sent, None while pending or for a fault without one
    fault: str = None


@dataclasses.dataclass
class Connection:
    """One accepted TLS connection: its id, the SNI sent, and the verified client cert."""

    id: int
    sni: str
    client_cert: dict


@dataclasses.dataclass
class Request:
    """A request as the handlers see it (after TLS, with the body read)."""

    method: str
    path: str
    query: dict
    headers: object  # email.message.Message (case-insensitive get/get_all)
    body: bytes
    body_too_large: bool
    conn: Connection
    user: UserInfo = None
    attrs: Attributes = None


_tls_local = threading.local()


def _sni_callback(ssl_socket, server_name, context):
    _tls_local.sni = server_name


class _HTTPServer(http.server.ThreadingHTTPServer):
    """ThreadingHTTPServer that does the TLS handshake in each connection's own thread."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, api):
        self.api = api
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def server_bind(self):
        # HTTPServer.server_bind calls socket.getfqdn(), a reverse DNS lookup; skip it.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, sock, client_address):
        api = self.api
        conn_id = next(api._connection_ids)
        try:
            # As Go's net/http (the real kube-apiserver) does: no Nagle, so a response's headers and body are
            # not held back waiting for the client's delayed ACK (~40 ms a request otherwise).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(api.handshake_timeout)
            _tls_local.sni = None
            tls = api._ssl_context.wrap_socket(sock, server_side=True)
        except (ssl.SSLError, OSError) as e:
            api.tls_errors.append((conn_id, str(e)))
            sock.close()
            return
        peer = tls.getpeercert()
        tls.aicr_conn = Connection(conn_id, _tls_local.sni, _subject(peer) if peer else None)
        with api._lock:
            api._open_sockets.add(tls)
        try:
            tls.settimeout(api.idle_timeout)
            self.RequestHandlerClass(tls, client_address, self)
        except (OSError, ssl.SSLError):
            pass
        finally:
            with api._lock:
                api._open_sockets.discard(tls)
            try:
                tls.close()
            except OSError:
                pass

    def shutdown_request(self, request):
        pass  # finish_request closed the TLS socket; the plain one was detached by wrap_socket

    def handle_error(self, request, client_address):
        if self.api.verbose:
            traceback.print_exc()


def _subject(peercert):
    """``{"cn": CN, "o": [O, ...]}`` from ``SSLSocket.getpeercert()``."""
    cn, orgs = None, []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                cn = value
            elif key == "organizationName":
                orgs.append(value)
    return {"cn": cn, "o": orgs}


class _Handler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive; every response has a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "aicr-test-apiserver"
    sys_version = ""

    def do_GET(self):
        self._dispatch()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET

    def date_time_string(self, timestamp=None):
        hostile = self.server.api.header_values.get("Date")
        return hostile if hostile is not None else super().date_time_string(timestamp)

    def log_message(self, fmt, *args):
        if self.server.api.verbose:
            sys.stderr.write("apiserver: %s\n" % (fmt % args))

    def send_response(self, code, message=None):
        if getattr(self, "_record", None) is not None:
            self._record.status = code
        super().send_response(code, message)

    def _read_body(self, limit):
        """Read the body (Content-Length or chunked). Returns (bytes, too_large)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks, size = [], 0
            while True:
                line = self.rfile.readline(65537)
                length = int(line.split(b";")[0].strip() or b"0", 16)
                if length == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                size += length
                if size > limit:
                    self.close_connection = True
                    return b"", True
                chunks.append(self.rfile.read(length))
                self.rfile.readline(65537)
            return b"".join(chunks), False
        length = int(self.headers.get("Content-Length") or 0)
        if length > limit:
            # Read and drop a bounded amount so the client gets to read the 413, then close.
            self.close_connection = True
            left = length if length <= 4 * limit else 0
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
            return b"", True
        return (self.rfile.read(length) if length else b""), False

    def _dispatch(self):
        api = self.server.api
        conn = self.request.aicr_conn
        url = urllib.parse.urlsplit(self.path)
        self._record = record = RequestRecord(
            method=self.command, path=url.path, query=url.query,
            content_type=self.headers.get("Content-Type"),
            authorization=self.headers.get("Authorization"),
            client_cert=conn.client_cert, sni=conn.sni, connection_id=conn.id,
            user_agent=self.headers.get("User-Agent"),
            impersonation=_impersonation_headers(self.headers),
            headers=list(self.headers.items()))
        api._record(record)
        try:
            self._serve(api, record, url, conn)
        finally:
            self._record = None

    def _serve(self, api, record, url, conn):
        try:
            body, too_large = self._read_body(api.max_body)
        except (ValueError, OSError):
            self.close_connection = True
            self._send_status(bad_request("invalid request body framing").status)
            return
        record.body = body
        path = url.path
        if api.path_prefix and path.startswith(api.path_prefix + "/"):
            path = path[len(api.path_prefix):]  # a Rancher-style proxy in front of the API server
        req = Request(self.command, path, urllib.parse.parse_qs(url.query, keep_blank_values=True),
                      self.headers, body, too_large, conn)
        fault = api._take_fault(self.command)
        if fault:
            record.fault = fault
            self._fault(fault, req)
            return
        code, payload = api._respond(req)
        record.user = req.user.name if req.user else None
        self._send_json(code, payload)

    def _send_json(self, code, payload):
        data, content_type = _encode_payload(payload)
        self._send(code, data, content_type,
                   [("X-Content-Type-Options", "nosniff")] if isinstance(payload, TextError) else ())

    def _send_status(self, body):
        self._send_json(body["code"], body)

    def _send(self, code, data, content_type, extra_headers=()):
        try:
            hostile = self.server.api.header_values
            if "Content-Type" in hostile or "Content-Length" in hostile:
                self.close_connection = True
            self.send_response(code)
            self.send_header("Content-Type", hostile.get("Content-Type", content_type))
            self.send_header("Content-Length", hostile.get("Content-Length", str(len(data))))
            self.send_header("Cache-Control", "no-cache, private")
            for name, value in extra_headers:
                self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self.close_connection = True

    # ---- faults (see APIServer.fault)

    def _fault(self, kind, req):
        api = self.server.api
        self.close_connection = True
        if kind.startswith("store-"):
            api._respond(req)  # carried out; its answer is lost
            kind = kind[len("store-"):]
            if kind == "close":
                return
            if kind == "conflict":
                self._send_status(conflict_status_for_fault())
                return
        if kind == "hang":
            api._stopping.wait(api.fault_hang_seconds)
            return
        if kind == "reset":
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if kind == "html-500":
            page = (b"<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n"
                    b"<center><h1>500 Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
                    b"</body>\r\n</html>\r\n")
            self._send(500, page, "text/html")
            return
        if kind == "redirect":
            target = "https://sso.example.invalid/login?rd=" + urllib.parse.quote(req.path, safe="")
            self._send(302, b'<a href="%s">Found</a>.\n' % target.encode(), "text/html; charset=utf-8",
                       [("Location", target)])
            return
        try:
            if kind == "huge":
                self._write_head(200, "application/json", api.fault_huge_bytes)
                chunk, left = b" " * 65536, api.fault_huge_bytes
                while left > 0 and not api._stopping.is_set():
                    self.wfile.write(chunk[:left])
                    left -= min(left, len(chunk))
                return
            code, payload = api._respond(req)
            data, content_type = _encode_payload(payload)
            self._write_head(code, content_type, len(data))
            if kind == "close-mid-body":
                self.wfile.write(data[:len(data) // 2])
            elif kind == "trickle":
                for i in range(len(data)):
                    if api._stopping.wait(api.fault_delay):
                        return
                    self.wfile.write(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass

    def _write_head(self, code, content_type, length):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(length))
        self.end_headers()


# Go's encoding/json escapes these inside strings (HTML-safe output), as kube-apiserver's bodies show.
_GO_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _encode_payload(payload):
    """(bytes, content type) of a response: compact JSON as Go writes it, one newline after; or
    the plain text of a :class:`TextError`."""
    if isinstance(payload, TextError):
        return payload.text.encode("utf-8"), "text/plain; charset=utf-8"
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    text = re.sub("[<>&\u2028\u2029]", lambda m: _GO_JSON_ESCAPES[m.group(0)], text)
    # A lone surrogate (a hostile server's "\ud800"; Go would send U+FFFD) goes out as its JSON escape.
    text = re.sub("[\ud800-\udfff]", lambda m: "\\u%04x" % ord(m.group(0)), text)
    return text.encode("utf-8") + b"\n", "application/json"


def _page(items, meta, query, rv):
    """``limit`` and ``continue`` as the storage layer pages a list (apiserver ``storage/etcd3`` and
    ``storage.EncodeContinue``): items in key order after the token's ``start``, at most ``limit`` of them;
    ``metadata.continue`` (base64 JSON {"v", "rv", "start"}) and ``remainingItemCount`` when more remain.
    A token that does not decode is 400 ``continue key is not valid``. ``items`` are in key order already."""
    limit_text = query.get("limit", ["0"])[0] or "0"
    try:
        limit = int(limit_text)
    except ValueError:
        raise bad_request("limit: Invalid value: %s" % go_quote(limit_text))
    start = ""
    token = query.get("continue", [""])[0]
    if token:
        try:
            decoded = json.loads(base64.b64decode(token, validate=True).decode("utf-8"))
            start, rv = decoded["start"], str(decoded["rv"])
            if decoded.get("v") != "meta.k8s.io/v1" or not isinstance(start, str):
                raise ValueError(start)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            raise bad_request("continue key is not valid: incorrect encoded start resourceVersion (version "
                              "meta.k8s.io/v1)")
    key = lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])  # noqa: E731
    after = [obj for obj in items if "\x00".join(key(obj)) >= start]
    meta = dict(meta, resourceVersion=rv)
    if limit <= 0 or len(after) <= limit:
        return after, meta
    page, rest = after[:limit], after[limit:]
    next_start = "\x00".join(key(rest[0]))
    meta["continue"] = base64.b64encode(json.dumps(
        {"v": "meta.k8s.io/v1", "rv": int(rv), "start": next_start}).encode("utf-8")).decode("ascii")
    meta["remainingItemCount"] = len(rest)
    return page, meta


def _impersonation_headers(headers):
    found = {}
    for name, value in headers.items():
        if name.lower().startswith("impersonate-"):
            found.setdefault(name, []).append(value)
    return found


# --------------------------------------------------------------------------- the server


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
        self.fault_hang_seconds = 30.0
        self.fault_delay = 1.0
        self.fault_huge_bytes = 64 * 1024 * 1024
        # Hostile response headers for fuzzing, {name: value}: "Date" replaces the clock's; "Content-Type"
        # and "Content-Length" replace the real ones (the connection then closes after the answer).
        self.header_values = {}
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
        """
        return self._fault

    @fault.setter
    def fault(self, kind):
        self.set_fault(kind)

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

        ``actions``: a list of action dicts of tests/interpositions.py (``patch``: a JSON patch applied to
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
            raise APIError(status(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported '
                                  'value: []string{%s}: supported values: "All"' % ", ".join(
                                      go_quote(v) for v in dry_run), {"group": "meta.k8s.io",
                                                                       "kind": "PatchOptions"}))
        self._land_interposition(a.name, "before-patch")
        with self.store.lock:
            old = self.store.get(res.plural, "", a.name)
            if old is None:
                raise not_found(res, a.name)
            new = self._apply_patch(content_type, req.body, old)
            self._check_update(res, a.name, old, new)
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
                raise bad_request("json: cannot unmarshal %s into Go value of type jsonpatch.Patch"
                                  % _json_type(patch))
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


# --------------------------------------------------------------------------- program mode


def main(argv=None):
    """``python -m tests.apiserver --fixtures DIR --dir OUTDIR [--port N] [--verbose]``.

    Writes OUTDIR/ca.crt, server and client certificates, and OUTDIR/kubeconfig (a context
    per user, current-context alice); prints the URL, then ``export KUBECONFIG=...``;
    serves until SIGTERM or SIGINT, then exits 0.
    """
    parser = argparse.ArgumentParser(prog="python -m tests.apiserver", description=main.__doc__.split("\n")[0])
    parser.add_argument("--fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
    parser.add_argument("--dir", required=True, help="where to write the CA, certificates and kubeconfig")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--operator-namespace", default="aicr-system")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    outdir = os.path.abspath(args.dir)
    os.makedirs(outdir, exist_ok=True)
    server = APIServer(fixtures_dir=args.fixtures, workdir=outdir, port=args.port,
                       operator_namespace=args.operator_namespace, verbose=args.verbose).start()
    try:
        kubeconfig = server.write_kubeconfig_all(os.path.join(outdir, "kubeconfig"))
        print(server.url)
        print("export KUBECONFIG=%s" % kubeconfig)
        sys.stdout.flush()
        while not stop.wait(0.2):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
