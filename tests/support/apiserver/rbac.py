"""The test API server: users, request attributes and RBAC grants (k8s.io/apiserver authorization)."""

import dataclasses
import urllib.parse

from .resources import APPROVERS, AUTHENTICATED, GROUP, MASTERS, READERS, UNAUTHENTICATED


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
