"""Contract tests: the same requests against our test API server and a real kube-apiserver.

Every test takes ``any_server``, parametrised "fake" (tests/support/apiserver/) and "real"
(tests/support/real_apiserver.py, a current kube-apiserver + etcd built from the Go module proxy, marked
``real``; ``make test-real`` runs it on each pinned version): the default run (``make test``) checks the
test server, ``make test-real`` (``pytest -m real``) checks the real one, and both must give the same
answers: status codes, Status ``reason``, ``message`` and ``details`` (causes included), the headers the
plugin reads, warnings, list contents, patch results, SelfSubjectReview, and the operator's admission
rules (ValidatingAdmissionPolicies on the real server, tests/real_apiserver/admission-policies.yaml), denial
wording included. Where the test server differed, it was fixed (see tests/support/apiserver/); names are
made unique per test, so the real server (one per session, never reset) needs no cleaning.

What is deliberately NOT asserted here (the plugin depends on none of it):

- ``application/apply-patch+yaml``: the test server does not implement server-side apply (415).
- ``metadata.managedFields`` (the real server adds it to every object), the texts of JSON
  decoding errors (Go's vs Python's), and the path index a real server shows system:masters
  for an unknown non-API path.
"""

import http.client
import json
import os
import re
import ssl
import subprocess
import urllib.parse
import uuid

import pytest

from tests.support.real_apiserver import real_apiserver  # noqa: F401  (session fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")
GROUP = "operator.aicr.run"
RR = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
NS = "aicr-system"
CM = "/api/v1/namespaces/%s/configmaps" % NS
RUN = "contract.aicr.run/run"
ROLE = "contract.aicr.run/role"
OUTCOME = "operator.aicr.run/outcome"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
DIGEST = "sha256:" + "ab" * 32
GENERIC_422 = "the server rejected our request due to an error in our request"


# --------------------------------------------------------------------------- the two servers


class Server:
    """What a contract test needs from either server: ``kind`` ("fake" or "real"), ``url``,
    ``kubeconfig(path, user)``, ``request(method, path, body, user=, token=, content_type=)``
    -> (status, dict or text), and ``load(objects)`` -> the stored objects."""

    kind = None

    def status_of(self, method, path, body=None, **kw):
        return self.request(method, path, body, **kw)[0]


class FakeServer(Server):
    kind = "fake"

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self._ctx = ssl.create_default_context(cafile=server.ca_file)

    def kubeconfig(self, path, user):
        return self.server.write_kubeconfig(str(path), user=user)

    def request(self, method, path, body=None, user="admin", token=None, content_type=None):
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        elif user is not None:
            headers["Authorization"] = "Bearer " + self.server.token(user)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
            headers["Content-Type"] = content_type or "application/json"
        conn = http.client.HTTPSConnection("127.0.0.1", self.server.port, context=self._ctx, timeout=30)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            payload = resp.read()
        finally:
            conn.close()
        try:
            return resp.status, json.loads(payload.decode("utf-8")) if payload else None
        except ValueError:
            return resp.status, payload.decode("utf-8", "replace")

    def load(self, objects):
        stored = []
        for obj in objects:
            obj = json.loads(json.dumps(obj))
            for key in SERVER_METADATA:
                obj["metadata"].pop(key, None)
            stored.append(self.server.put_object(obj))
        return stored


class RealServer(Server):
    kind = "real"

    def __init__(self, server):
        self.server = server
        self.url = server.url

    def kubeconfig(self, path, user):
        return self.server.write_kubeconfig(str(path), user=user)

    def request(self, method, path, body=None, user="admin", token=None, content_type=None):
        return self.server.request(method, path, body, user=user, token=token, content_type=content_type)

    def load(self, objects):
        return self.server.load_objects(objects)


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.real)])
def any_server(request):
    """The test API server ("fake", its objects put back after the test) or the session's
    real kube-apiserver ("real", marked ``real``), behind one small interface."""
    if request.param == "fake":
        return FakeServer(request.getfixturevalue("api_server"))
    return RealServer(request.getfixturevalue("real_apiserver"))


# --------------------------------------------------------------------------- objects and checks


def new_id():
    return uuid.uuid4().hex[:16]


def rollout(run_id, attempt=1, labels=None, status=None):
    """A RuntimeRollout named ``rollout-<run_id>-<attempt>`` labelled with the test's run id."""
    return {
        "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
        "metadata": {"name": "rollout-%s-%d" % (run_id, attempt), "labels": dict({RUN: run_id}, **(labels or {}))},
        "spec": {
            "runtimeRef": {"name": "cluster", "uid": "6f0c1b2e-5d4a-4c3b-9a8f-7e6d5c4b3a21"},
            "from": {"desiredStateDigest": DIGEST},
            "to": {"desiredStateDigest": "sha256:" + run_id * 4},
            "deadline": "2030-01-01T00:00:00Z",
            "approvalRequired": True,
            "startingInventory": {"releases": 1, "digest": DIGEST},
            "steps": [{"release": "gpu-operator", "operation": "Upgrade", "assessment": "manual",
                       "changesCRDs": True, "futureField": {"kept": True}}],
        },
        "status": status or {"phase": "AwaitingApproval", "outcome": "", "message": "Waiting for an approval.",
                             "steps": [{"release": "gpu-operator", "state": "Pending"}]},
    }


def configmap(name, run_id, labels=None, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS, "labels": dict({RUN: run_id}, **(labels or {}))},
            "immutable": True, "data": data or {"k": "v"}}


def approval(user="bob@example.com", reason="Maintenance window"):
    return {"user": user, "expires": "2030-01-01T00:00:00Z", "reason": reason}


def check_status(body, code, reason, message, details=None):
    """A Status failure with exactly this code, reason and message (a str, or a compiled regex
    that must match all of it) and, unless None, these details (``...`` for no details key)."""
    assert isinstance(body, dict), body
    assert (body.get("kind"), body.get("apiVersion"), body.get("status"), body.get("metadata")) == (
        "Status", "v1", "Failure", {}), body
    assert (body.get("code"), body.get("reason")) == (code, reason), body
    if isinstance(message, str):
        assert body.get("message") == message, body
    else:
        assert message.fullmatch(body.get("message") or ""), body
    if details is ...:
        assert "details" not in body, body
    elif details is not None:
        assert body.get("details") == details, body


def forbidden_text(user, verb, resource, group, namespace=None):
    scope = 'in the namespace "%s"' % namespace if namespace else "at the cluster scope"
    return 'User "%s" cannot %s resource "%s" in API group "%s" %s' % (user, verb, resource, group, scope)


@pytest.fixture
def loaded(any_server):
    """One rollout of this test's own, loaded: (server, name, stored object)."""
    run_id = new_id()
    stored = any_server.load([rollout(run_id)])[0]
    return any_server, stored["metadata"]["name"], stored


# --------------------------------------------------------------------------- GET


def test_get_a_rollout_returns_the_object_as_stored(loaded):
    server, name, _ = loaded
    want = rollout(name.split("-")[1])
    code, got = server.request("GET", RR + "/" + name, user="carol@example.com")
    assert code == 200, got
    assert (got["kind"], got["apiVersion"]) == ("RuntimeRollout", "operator.aicr.run/v1alpha1")
    assert got["spec"] == want["spec"]                     # unknown fields kept as they were
    assert got["status"] == want["status"]                 # written through /status on the real one
    meta = got["metadata"]
    assert meta["name"] == name and meta["labels"] == want["metadata"]["labels"]
    assert set(meta) - {"managedFields"} == {"name", "uid", "resourceVersion", "creationTimestamp",
                                              "generation", "labels"}
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"]) and meta["resourceVersion"].isdigit()
    assert RFC3339.match(meta["creationTimestamp"]) and meta["generation"] == 1


def test_get_a_configmap_returns_the_object_as_stored(any_server):
    run_id = new_id()
    name = "aicr-plan-" + run_id
    any_server.load([configmap(name, run_id, data={"recipe.json": '{"a": 1}\n', "renderFlags": "[]"})])
    code, got = any_server.request("GET", CM + "/" + name, user="carol@example.com")
    assert code == 200, got
    assert (got["kind"], got["apiVersion"], got["immutable"]) == ("ConfigMap", "v1", True)
    assert got["data"] == {"recipe.json": '{"a": 1}\n', "renderFlags": "[]"}
    assert set(got["metadata"]) - {"managedFields"} == {"name", "namespace", "uid", "resourceVersion",
                                                         "creationTimestamp", "labels"}


def test_list_shapes(any_server):
    run_id = new_id()
    any_server.load([rollout(run_id, 2), rollout(run_id, 1), configmap("cm-%s-b" % run_id, run_id),
                     configmap("cm-%s-a" % run_id, run_id)])
    selector = "?labelSelector=" + urllib.parse.quote("%s=%s" % (RUN, run_id))
    code, body = any_server.request("GET", RR + selector, user="carol@example.com")
    assert code == 200, body
    assert (body["kind"], body["apiVersion"]) == ("RuntimeRolloutList", "operator.aicr.run/v1alpha1")
    assert body["metadata"]["continue"] == "" and body["metadata"]["resourceVersion"].isdigit()
    assert [i["metadata"]["name"] for i in body["items"]] == ["rollout-%s-1" % run_id, "rollout-%s-2" % run_id]
    assert all((i["kind"], i["apiVersion"]) == ("RuntimeRollout", "operator.aicr.run/v1alpha1") for i in body["items"])
    code, body = any_server.request("GET", CM + selector, user="carol@example.com")
    assert code == 200, body
    assert (body["kind"], body["apiVersion"]) == ("ConfigMapList", "v1")
    assert set(body["metadata"]) == {"resourceVersion"}
    assert [i["metadata"]["name"] for i in body["items"]] == ["cm-%s-a" % run_id, "cm-%s-b" % run_id]
    assert all("kind" not in i and "apiVersion" not in i for i in body["items"])  # a typed list's items


# --------------------------------------------------------------------------- LIST with selectors


@pytest.fixture
def labelled(any_server):
    """Four ConfigMaps and two rollouts of this test: (server, run id, list(selector) -> names)."""
    run_id = new_id()
    any_server.load([
        configmap("cm-%s-plan" % run_id, run_id, {ROLE: "plan"}),
        configmap("cm-%s-report" % run_id, run_id, {ROLE: "assessment"}),
        configmap("cm-%s-empty" % run_id, run_id, {ROLE: ""}),
        configmap("cm-%s-none" % run_id, run_id),
        rollout(run_id, 1, {OUTCOME: "Succeeded", "contract.aicr.run/attempt": "1"}),
        rollout(run_id, 2, {"contract.aicr.run/attempt": "2"}),
    ])

    def names(path, selector, user="carol@example.com"):
        query = "?labelSelector=" + urllib.parse.quote("%s=%s,%s" % (RUN, run_id, selector))
        code, body = any_server.request("GET", path + query, user=user)
        assert code == 200, body
        return {i["metadata"]["name"].replace(run_id, "X") for i in body["items"]}

    return any_server, run_id, names


@pytest.mark.parametrize("selector,expected", [
    ("contract.aicr.run/role=plan", {"plan"}),
    ("contract.aicr.run/role==plan", {"plan"}),
    (" contract.aicr.run/role = plan ", {"plan"}),
    ("contract.aicr.run/role!=plan", {"report", "empty", "none"}),    # an absent key matches !=
    ("contract.aicr.run/role", {"plan", "report", "empty"}),           # exists, empty value included
    ("!contract.aicr.run/role", {"none"}),
    ("contract.aicr.run/role=", {"empty"}),
    ("contract.aicr.run/role in (plan,assessment)", {"plan", "report"}),
    ("contract.aicr.run/role in (plan, in, notin)", {"plan"}),         # keywords are values in a set
    ("contract.aicr.run/role in ()", {"empty"}),                       # () is the set {""}
    ("contract.aicr.run/role notin (plan)", {"report", "empty", "none"}),
    ("contract.aicr.run/role notin (plan,,assessment)", {"none"}),
    ("contract.aicr.run/role=plan,contract.aicr.run/role=assessment", set()),
    ("contract.aicr.run/role,!contract.aicr.run/role", set()),
])
def test_label_selectors_on_configmaps(labelled, selector, expected):
    _, _, names = labelled
    assert names(CM, selector) == {"cm-X-%s" % e for e in expected}


@pytest.mark.parametrize("selector,expected", [
    ("operator.aicr.run/outcome", {1}),
    ("!operator.aicr.run/outcome", {2}),
    ("operator.aicr.run/outcome=Succeeded", {1}),
    ("operator.aicr.run/outcome!=Succeeded", {2}),
    ("operator.aicr.run/outcome in (Failed,Expired,Revoked)", set()),
    ("contract.aicr.run/attempt>1", {2}),
    ("contract.aicr.run/attempt<2", {1}),
    ("contract.aicr.run/attempt>0", {1, 2}),
])
def test_label_selectors_on_rollouts(labelled, selector, expected):
    _, _, names = labelled
    assert names(RR, selector) == {"rollout-X-%d" % e for e in expected}


NAME_PART = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
             "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
               "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
OPERATORS = "in, notin, =, ==, !=, gt, lt"
KEY = "unable to parse requirement: <nil>: Invalid value: "  # validateLabelKey with the parser's nil path


@pytest.mark.parametrize("selector,message", [
    ("a=b,", "found '', expected: identifier after ','"),
    ("a,,b", "found ',', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("(a", "found '(', expected: !, identifier, or 'end of string'"),
    ("a b", "unable to parse requirement: found 'b', expected: " + OPERATORS),
    ("a!", "unable to parse requirement: found '!', expected: " + OPERATORS),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("!!a", "unable to parse requirement: found '!', expected: identifier"),
    ("a===", "unable to parse requirement: found '=', expected: identifier"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("a<b", "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must "
            "be an integer"),
    ("-a=b", KEY + '"-a": name part ' + NAME_PART),
    ("/a", KEY + '"/a": prefix part must be non-empty'),
    ("a/b/c", KEY + '"a/b/c": a valid label key ' + NAME_PART
     + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("Example.com/a", KEY + '"Example.com/a": prefix part a lowercase '
     "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
     "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("x" * 64, KEY + '"%s": name part must be no more than 63 bytes' % ("x" * 64)),
    ("a=-b", 'unable to parse requirement: values[0][a]: Invalid value: "-b": ' + LABEL_VALUE),
    ("a=<b>", 'unable to parse requirement: found \'<\', expected: identifier'),
    ("a=" + "v" * 64, 'unable to parse requirement: values[0][a]: Invalid value: "%s": must be no more '
     "than 63 bytes" % ("v" * 64)),
])
def test_invalid_label_selector_is_400_with_the_parser_message(any_server, selector, message):
    for path in (CM, RR):
        code, body = any_server.request("GET", path + "?labelSelector=" + urllib.parse.quote(selector),
                                        user="carol@example.com")
        assert code == 400, body
        check_status(body, 400, "BadRequest", wording(any_server, message), ...)


def wording(server, message):
    """``message`` as the server says it: the test server and every pinned release from 1.37 as written above;
    1.34 (the real tier's floor) counted label lengths in characters and called a label key "a qualified name"."""
    if server.kind == "real" and server.server.version.startswith("v1.34."):
        return message.replace("no more than 63 bytes", "no more than 63 characters").replace(
            ": a valid label key must", ": a qualified name must")
    return message


@pytest.mark.parametrize("path,selector,message", [
    (RR, "metadata.name=NAME", None),
    (RR, "metadata.name==NAME,metadata.name!=other", None),
    (CM, ",", None),
    (RR, "metadata.name = NAME", "field label not supported: metadata.name "),    # no trimming
    (RR, "metadata.namespace=x", "field label not supported: metadata.namespace"),  # cluster-scoped
    (RR, "status.phase=Validating", "field label not supported: status.phase"),
    (CM, "metadata.uid=x", '"metadata.uid" is not a known field selector: only "metadata.name", '
                           '"metadata.namespace"'),
    (CM, "a,b", "invalid selector: 'a,b'; can't understand 'a'"),
    (RR, "metadata.name=a\\qb", "invalid field selector: invalid escape sequence: \\q"),
    (RR, "metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
])
def test_field_selectors(loaded, path, selector, message):
    server, name, _ = loaded
    query = "?fieldSelector=" + urllib.parse.quote(selector.replace("NAME", name))
    code, body = server.request("GET", path + query, user="carol@example.com")
    if message is None:
        assert code == 200, body
        if path == RR:
            assert [i["metadata"]["name"] for i in body["items"]] == [name]
    else:
        check_status(body, 400, "BadRequest", message, ...)


# --------------------------------------------------------------------------- 404


def test_get_a_missing_object_is_404(any_server):
    name = "rollout-%s-9" % new_id()
    code, body = any_server.request("GET", RR + "/" + name, user="carol@example.com")
    check_status(body, 404, "NotFound", 'runtimerollouts.operator.aicr.run "%s" not found' % name,
                 {"name": name, "group": GROUP, "kind": "runtimerollouts"})
    code, body = any_server.request("GET", CM + "/nope-" + name, user="carol@example.com")
    check_status(body, 404, "NotFound", 'configmaps "nope-%s" not found' % name,
                 {"name": "nope-" + name, "kind": "configmaps"})
    code, body = any_server.request("PATCH", RR + "/" + name, {"metadata": {}}, user="bob@example.com",
                                    content_type=MERGE)
    check_status(body, 404, "NotFound", 'runtimerollouts.operator.aicr.run "%s" not found' % name,
                 {"name": name, "group": GROUP, "kind": "runtimerollouts"})


@pytest.mark.parametrize("path,user", [
    ("/apis/operator.aicr.run/v1alpha1/namespaces/x/clusterruntimes", "bob@example.com"),
    ("/apis/operator.aicr.run/v1alpha1/namespaces/x/clusterruntimes/cluster", "admin"),
    ("/apis/operator.aicr.run/v1alpha1/things", "admin"),
    ("/apis/operator.aicr.run/v9/runtimerollouts", "admin"),
    ("/apis/operator.aicr.run/v9", "admin"),
    ("/apis/example.com/v1/things", "admin"),
    ("/apis/example.com", "bob@example.com"),
])
def test_a_path_no_api_serves_is_a_plain_text_404(any_server, path, user):
    assert any_server.request("GET", path, user=user) == (404, "404 page not found\n")


@pytest.mark.parametrize("path", [
    "/api/v1/things", "/api/v1/configmaps/x", "/api/v1/namespaces/aicr-system/configmaps/aicr-x/status",
    "/api/v2/configmaps",
])
def test_an_unknown_path_in_a_built_in_api_is_a_404_status(any_server, path):
    code, body = any_server.request("GET", path, user="admin")
    check_status(body, 404, "NotFound", "the server could not find the requested resource", {})


def test_an_unknown_subresource_of_a_custom_resource_is_the_objects_404(loaded):
    server, name, _ = loaded
    code, body = server.request("GET", RR + "/" + name + "/scale", user="admin")
    check_status(body, 404, "NotFound", 'runtimerollouts.operator.aicr.run "%s" not found' % name,
                 {"name": name, "group": GROUP, "kind": "runtimerollouts"})


def test_a_create_only_resource_refuses_other_methods_with_405(any_server):
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    for method in ("GET", "DELETE"):
        code, body = any_server.request(method, path, user="admin")
        check_status(body, 405, "MethodNotAllowed", "the server does not allow this method on the requested resource",
                     {})


# --------------------------------------------------------------------------- 401 and 403


@pytest.mark.parametrize("token", ["not-a-valid-token", "aicr-alice-" + "0" * 24, "x" * 300])
def test_a_bad_token_is_401(any_server, token):
    for path in (RR, RR + "/x", CM):
        code, body = any_server.request("GET", path, token=token)
        assert (code, body) == (401, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": "Unauthorized", "reason": "Unauthorized", "code": 401})


@pytest.mark.parametrize("case", [
    "get", "get-missing", "list", "get-configmap", "list-configmaps", "list-configmaps-elsewhere", "patch",
    "patch-status", "anonymous",
])
def test_forbidden_is_403_decided_before_existence(loaded, case):
    server, name, _ = loaded
    missing = "rollout-%s-9" % new_id()
    mallory, carol, bob = "mallory@example.com", "carol@example.com", "bob@example.com"
    rr = "runtimerollouts.operator.aicr.run"
    cases = {
        # (method, path, user, message, details)
        "get": ("GET", RR + "/" + name, mallory, '%s "%s" is forbidden: ' % (rr, name)
                + forbidden_text(mallory, "get", "runtimerollouts", GROUP),
                {"name": name, "group": GROUP, "kind": "runtimerollouts"}),
        "get-missing": ("GET", RR + "/" + missing, mallory, '%s "%s" is forbidden: ' % (rr, missing)
                        + forbidden_text(mallory, "get", "runtimerollouts", GROUP),
                        {"name": missing, "group": GROUP, "kind": "runtimerollouts"}),
        "list": ("GET", RR, mallory,
                 "%s is forbidden: " % rr + forbidden_text(mallory, "list", "runtimerollouts", GROUP),
                 {"group": GROUP, "kind": "runtimerollouts"}),
        "get-configmap": ("GET", CM + "/aicr-plan-x", mallory, 'configmaps "aicr-plan-x" is forbidden: '
                          + forbidden_text(mallory, "get", "configmaps", "", NS),
                          {"name": "aicr-plan-x", "kind": "configmaps"}),
        "list-configmaps": ("GET", CM, mallory, "configmaps is forbidden: "
                            + forbidden_text(mallory, "list", "configmaps", "", NS), {"kind": "configmaps"}),
        "list-configmaps-elsewhere": ("GET", "/api/v1/namespaces/default/configmaps", carol,
                                      "configmaps is forbidden: " + forbidden_text(carol, "list", "configmaps", "",
                                                                                   "default"),
                                      {"kind": "configmaps"}),
        "patch": ("PATCH", RR + "/" + name, carol, '%s "%s" is forbidden: ' % (rr, name)
                  + forbidden_text(carol, "patch", "runtimerollouts", GROUP),
                  {"name": name, "group": GROUP, "kind": "runtimerollouts"}),
        "patch-status": ("PATCH", RR + "/" + name + "/status", bob, '%s "%s" is forbidden: ' % (rr, name)
                         + forbidden_text(bob, "patch", "runtimerollouts/status", GROUP),
                         {"name": name, "group": GROUP, "kind": "runtimerollouts"}),
        "anonymous": ("GET", RR + "/" + name, None, '%s "%s" is forbidden: ' % (rr, name)
                      + forbidden_text("system:anonymous", "get", "runtimerollouts", GROUP),
                      {"name": name, "group": GROUP, "kind": "runtimerollouts"}),
    }
    method, path, user, message, details = cases[case]
    body = {"metadata": {"annotations": {"x": "y"}}} if method == "PATCH" else None
    code, reply = server.request(method, path, body, user=user, content_type=MERGE if body else None)
    check_status(reply, 403, "Forbidden", message, details)


# --------------------------------------------------------------------------- PATCH


def test_merge_patch_with_a_stale_resource_version_is_409(loaded):
    server, name, stored = loaded
    stale = stored["metadata"]["resourceVersion"]
    code, bumped = server.request("PATCH", RR + "/" + name, {"metadata": {"labels": {"team": "gpu"}}},
                                  user="bob@example.com", content_type=MERGE)
    assert code == 200 and bumped["metadata"]["resourceVersion"] != stale, bumped
    patch = {"metadata": {"resourceVersion": stale}, "spec": {"approval": approval()}}
    code, body = server.request("PATCH", RR + "/" + name, patch, user="bob@example.com", content_type=MERGE)
    check_status(body, 409, "Conflict",
                 'Operation cannot be fulfilled on runtimerollouts.operator.aicr.run "%s": the object has been '
                 "modified; please apply your changes to the latest version and try again" % name,
                 {"name": name, "group": GROUP, "kind": "runtimerollouts"})
    # the same with the current resourceVersion goes through
    patch["metadata"]["resourceVersion"] = bumped["metadata"]["resourceVersion"]
    code, body = server.request("PATCH", RR + "/" + name, patch, user="bob@example.com", content_type=MERGE)
    assert code == 200 and body["spec"]["approval"] == approval(), body


def test_json_patch_testing_a_stale_resource_version_is_422(loaded):
    """The plugin's conditional write: a ``test`` of /metadata/resourceVersion first."""
    server, name, stored = loaded
    stale = stored["metadata"]["resourceVersion"]
    server.request("PATCH", RR + "/" + name, {"metadata": {"labels": {"team": "gpu"}}},
                   user="bob@example.com", content_type=MERGE)
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": stale},
           {"op": "add", "path": "/spec/approval", "value": approval()}]
    code, body = server.request("PATCH", RR + "/" + name, ops, user="bob@example.com", content_type=JSON_PATCH)
    check_status(body, 422, "Invalid", GENERIC_422, {})
    code, current = server.request("GET", RR + "/" + name, user="bob@example.com")
    assert "approval" not in current["spec"]
    ops[0]["value"] = current["metadata"]["resourceVersion"]
    code, body = server.request("PATCH", RR + "/" + name, ops, user="bob@example.com", content_type=JSON_PATCH)
    assert code == 200 and body["spec"]["approval"] == approval(), body


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/status/phase", "value": "Validating"},
     {"op": "add", "path": "/spec/revocation", "value": {"user": "bob@example.com", "time": "2026-11-30T10:00:00Z",
                                                         "reason": "r"}}],
    [{"op": "test", "path": "/spec/approval", "value": {"user": "x"}}],        # absent, non-null value
    [{"op": "test", "path": "/spec/approvalRequired", "value": None}],        # present, null value
    [{"op": "test", "path": "/spec/steps/0/release", "value": "nvsentinel"}],
    [{"op": "remove", "path": "/spec/nothing"}],
    [{"op": "add", "path": "/spec/no/such/parent", "value": 1}],
    [{"op": "replace", "path": "/spec/steps/9", "value": 1}],
    [{"op": "frobnicate", "path": "/spec"}],
])
def test_json_patch_that_does_not_apply_is_422_with_the_generic_message(loaded, ops):
    server, name, stored = loaded
    code, body = server.request("PATCH", RR + "/" + name, ops, user="bob@example.com", content_type=JSON_PATCH)
    check_status(body, 422, "Invalid", GENERIC_422, {})
    code, after = server.request("GET", RR + "/" + name, user="bob@example.com")
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_a_test_of_null_passes_on_an_absent_field_and_fails_once_it_is_set(loaded):
    server, name, _ = loaded
    ops = [{"op": "test", "path": "/spec/approval", "value": None},
           {"op": "add", "path": "/spec/approval", "value": approval(reason="Window")}]
    code, body = server.request("PATCH", RR + "/" + name, ops, user="bob@example.com", content_type=JSON_PATCH)
    assert code == 200, body
    assert body["spec"]["approval"] == approval(reason="Window")
    code, body = server.request("PATCH", RR + "/" + name, ops[:1], user="bob@example.com", content_type=JSON_PATCH)
    check_status(body, 422, "Invalid", GENERIC_422, {})


@pytest.mark.parametrize("target", ["existing", "missing"])
def test_strategic_merge_patch_on_a_custom_resource_is_415(loaded, target):
    server, name, _ = loaded
    name = name if target == "existing" else "rollout-%s-9" % new_id()
    code, body = server.request("PATCH", RR + "/" + name, {"metadata": {"annotations": {"x": "y"}}},
                                user="bob@example.com", content_type=STRATEGIC)
    check_status(body, 415, "UnsupportedMediaType",
                 "the body of the request was in an unknown format - accepted media types include: "
                 "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml", ...)


def test_a_json_patch_that_is_not_a_list_is_400(loaded):
    server, name, _ = loaded
    code, body = server.request("PATCH", RR + "/" + name, {"op": "add"}, user="bob@example.com",
                                content_type=JSON_PATCH)
    check_status(body, 400, "BadRequest", "error decoding patch: json: cannot unmarshal object into Go value of type "
                 "[]handlers.jsonPatchOp", ...)


def test_a_merge_patch_renaming_the_object_is_400(loaded):
    server, name, _ = loaded
    code, body = server.request("PATCH", RR + "/" + name, {"metadata": {"name": "other"}}, user="bob@example.com",
                                content_type=MERGE)
    check_status(body, 400, "BadRequest",
                 "the name of the object (other) does not match the name on the URL (%s)" % name, ...)


def test_writes_bump_resource_version_and_generation_as_kube_does(loaded):
    server, name, stored = loaded
    rv = int(stored["metadata"]["resourceVersion"])
    # metadata only: a new resourceVersion, the same generation
    code, body = server.request("PATCH", RR + "/" + name, {"metadata": {"labels": {"team": "gpu"}}},
                                user="bob@example.com", content_type=MERGE)
    assert code == 200 and int(body["metadata"]["resourceVersion"]) > rv and body["metadata"]["generation"] == 1
    rv = int(body["metadata"]["resourceVersion"])
    # spec: generation + 1; status in the body is not written through the main resource
    patch = {"spec": {"approval": approval()}, "status": {"phase": "Completed"}}
    code, body = server.request("PATCH", RR + "/" + name, patch, user="bob@example.com", content_type=MERGE)
    assert code == 200 and int(body["metadata"]["resourceVersion"]) > rv and body["metadata"]["generation"] == 2
    assert body["status"]["phase"] == "AwaitingApproval" and body["spec"]["approval"] == approval()
    # a patch that changes nothing is not a write
    code, again = server.request("PATCH", RR + "/" + name, {"metadata": {"labels": {"team": "gpu"}}},
                                 user="bob@example.com", content_type=MERGE)
    assert code == 200 and again["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]


def test_dry_run_all_judges_a_patch_and_stores_nothing(loaded):
    """``?dryRun=All`` (kubectl's --dry-run=server, the plugin's too): the answer is the object as it would be
    stored, a failed ``test`` is the same 422, nothing is stored and the resourceVersion does not move."""
    server, name, stored = loaded
    rv = stored["metadata"]["resourceVersion"]
    pins = [{"op": "test", "path": "/metadata/uid", "value": stored["metadata"]["uid"]},
            {"op": "test", "path": "/spec/approval", "value": None}]
    add = [{"op": "add", "path": "/spec/approval", "value": approval()}]
    code, body = server.request("PATCH", RR + "/" + name + "?dryRun=All", pins + add, user="bob@example.com",
                                content_type=JSON_PATCH)
    assert code == 200, body
    assert body["spec"]["approval"] == approval() and body["metadata"]["resourceVersion"] == rv
    wrong = [{"op": "test", "path": "/metadata/uid", "value": "00000000-0000-0000-0000-000000000000"}] + add
    code, body = server.request("PATCH", RR + "/" + name + "?dryRun=All", wrong, user="bob@example.com",
                                content_type=JSON_PATCH)
    check_status(body, 422, "Invalid", GENERIC_422, {})
    code, body = server.request("PATCH", RR + "/" + name + "?dryRun=Some", pins + add, user="bob@example.com",
                                content_type=JSON_PATCH)
    cause = 'Unsupported value: ["Some"]: supported values: "All"'
    check_status(body, 422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: dryRun: ' + cause, {
        "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "dryRun"}],
        "group": "meta.k8s.io", "kind": "PatchOptions"})
    code, after = server.request("GET", RR + "/" + name, user="bob@example.com")
    assert "approval" not in after["spec"] and after["metadata"]["resourceVersion"] == rv


# --------------------------------------------------------------------------- kubectl sees the same


def test_kubectl_gets_the_same_answers(loaded, tmp_path):
    if not os.access(KUBECTL, os.X_OK):
        pytest.skip("no kubectl in .venv/bin")
    server, name, _ = loaded

    def kubectl(user, *args):
        config = server.kubeconfig(tmp_path / user.split("@")[0], user)
        return subprocess.run([KUBECTL, "--kubeconfig", config, "--cache-dir", str(tmp_path / "cache")] + list(args),
                              capture_output=True, text=True, timeout=60)

    out = kubectl("carol@example.com", "get", "aicrro", name, "-o", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metadata"]["name"] == name
    out = kubectl("mallory@example.com", "get", "runtimerollouts.operator.aicr.run", name)
    assert out.returncode == 1
    assert out.stderr == ('Error from server (Forbidden): runtimerollouts.operator.aicr.run "%s" is forbidden: %s\n'
                          % (name, forbidden_text("mallory@example.com", "get", "runtimerollouts", GROUP)))
    out = kubectl("admin", "get", "--raw", "/apis/example.com/v1/things")  # the plain-text 404
    assert out.returncode == 1
    assert out.stderr == "Error from server (NotFound): the server could not find the requested resource\n"


# --------------------------------------------------------------------------- who the caller is (SelfSubjectReview)
#
# kube-apiserver's own SelfSubjectReview (authentication.k8s.io/v1, every authenticated user may create one).

SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@pytest.mark.parametrize("user,groups", [
    ("alice@example.com", ["aicr-approvers"]), ("bob@example.com", ["aicr-approvers"]),
    ("carol@example.com", ["aicr-readers"]), ("mallory@example.com", []), ("admin", ["system:masters"]),
])
def test_self_subject_review_names_the_authenticated_user(any_server, user, groups):
    code, body = any_server.request("POST", SSR, REVIEW, user=user)
    assert code == 201, body
    assert (body["kind"], body["apiVersion"]) == ("SelfSubjectReview", "authentication.k8s.io/v1")
    info = body["status"]["userInfo"]
    assert info["username"] == user
    assert sorted(info["groups"]) == sorted(groups + ["system:authenticated"])


def test_self_subject_review_with_a_bad_token_is_401_and_anonymous_is_403(any_server):
    code, body = any_server.request("POST", SSR, REVIEW, token="not-a-valid-token")
    check_status(body, 401, "Unauthorized", "Unauthorized", ...)
    code, body = any_server.request("POST", SSR, REVIEW, user=None)
    check_status(body, 403, "Forbidden", "selfsubjectreviews.authentication.k8s.io is forbidden: "
                 + forbidden_text("system:anonymous", "create", "selfsubjectreviews", "authentication.k8s.io"),
                 {"group": "authentication.k8s.io", "kind": "selfsubjectreviews"})


# --------------------------------------------------------------------------- the operator's admission rules
#
# The real server judges them with the ValidatingAdmissionPolicies of tests/real_apiserver/admission-policies.yaml;
# the test server with tests/support/apiserver/admission.py. Both answer 422 Invalid with the policy dispatcher's
# wording and the rule's message, and store nothing.

ACK = {"release": "gpu-operator", "user": "bob@example.com", "time": "2030-01-01T00:00:00Z"}
REVOCATION = {"user": "bob@example.com", "time": "2030-01-01T00:00:00Z", "reason": "stop"}

# case -> (status of the rollout, spec fields it starts with, labels, JSON patch by bob, policy, rule message)
RULE_CASES = {
    "approval-for-someone-else": (None, {}, {}, [{"op": "add", "path": "/spec/approval",
                                                  "value": approval("alice@example.com")}],
                                  "approval", 'spec.approval.user must be the requesting user "bob@example.com"'),
    "approval-changed": (None, {"approval": approval()}, {}, [{"op": "replace", "path": "/spec/approval/reason",
                                                               "value": "another reason"}],
                         "approval", "spec.approval is set once and cannot be changed or removed"),
    "approval-removed": (None, {"approval": approval()}, {}, [{"op": "remove", "path": "/spec/approval"}],
                         "approval", "spec.approval is set once and cannot be changed or removed"),
    "approval-expires-not-a-time": (None, {}, {}, [{"op": "add", "path": "/spec/approval",
                                                    "value": dict(approval(), expires="tomorrow")}],
                                    "approval", "spec.approval.expires must be an RFC 3339 time"),
    "revocation-without-approval": (None, {}, {}, [{"op": "add", "path": "/spec/revocation", "value": REVOCATION}],
                                    "revocation", "spec.revocation requires spec.approval"),
    "revocation-while-validating": ({"phase": "Validating"}, {"approval": approval()}, {},
                                    [{"op": "add", "path": "/spec/revocation", "value": REVOCATION}],
                                    "revocation", "spec.revocation cannot be set while status.phase is Validating"),
    "revocation-after-the-end": ({"phase": "Completed", "outcome": "Succeeded"}, {"approval": approval()},
                                 {OUTCOME: "Succeeded"},
                                 [{"op": "add", "path": "/spec/revocation", "value": REVOCATION}],
                                 "revocation", "spec.revocation cannot be set after the rollout has ended"),
    "revocation-for-someone-else": (None, {"approval": approval()}, {},
                                    [{"op": "add", "path": "/spec/revocation",
                                      "value": dict(REVOCATION, user="alice@example.com")}],
                                    "revocation", 'spec.revocation.user must be the requesting user "bob@example.com"'),
    "revocation-changed": (None, {"approval": approval(), "revocation": REVOCATION}, {},
                           [{"op": "replace", "path": "/spec/revocation/reason", "value": "other"}],
                           "revocation", "spec.revocation is set once and cannot be changed or removed"),
    "acknowledgement-not-awaited": (None, {}, {}, [{"op": "add", "path": "/spec/acknowledgements", "value": [ACK]}],
                                    "acknowledgements", "a new spec.acknowledgements entry needs a release in "
                                                        "status.awaitingAcknowledgement, and there is none"),
    "acknowledgement-of-another-release": (
        {"phase": "AwaitingAcknowledgement", "awaitingAcknowledgement": {"release": "nvsentinel"}}, {}, {},
        [{"op": "add", "path": "/spec/acknowledgements", "value": [ACK]}], "acknowledgements",
        'a new spec.acknowledgements entry must name the release in status.awaitingAcknowledgement ("nvsentinel")'),
    "acknowledgement-for-someone-else": (
        {"phase": "AwaitingAcknowledgement", "awaitingAcknowledgement": {"release": "gpu-operator"}}, {}, {},
        [{"op": "add", "path": "/spec/acknowledgements", "value": [dict(ACK, user="alice@example.com")]}],
        "acknowledgements", 'a new spec.acknowledgements entry must name the requesting user "bob@example.com"'),
    "acknowledgement-removed": (
        {"phase": "AwaitingAcknowledgement", "awaitingAcknowledgement": {"release": "gpu-operator"}},
        {"acknowledgements": [ACK]}, {}, [{"op": "remove", "path": "/spec/acknowledgements/0"}],
        "acknowledgements", "spec.acknowledgements is append-only"),
    "spec-field-changed": (None, {}, {}, [{"op": "replace", "path": "/spec/deadline", "value": "2031-01-01T00:00:00Z"}],
                           "immutable", "spec.deadline is immutable"),
    "outcome-label-set": (None, {}, {}, [{"op": "add", "path": "/metadata/labels/operator.aicr.run~1outcome",
                                          "value": "Succeeded"}],
                          "immutable", "the label operator.aicr.run/outcome is immutable"),
}

POLICY_NAMES = {"approval": "aicr-rollout-approval", "revocation": "aicr-rollout-revocation",
                "acknowledgements": "aicr-rollout-acknowledgements", "immutable": "aicr-rollout-immutable"}


def denial_prefix(server, name, policy):
    """How the ValidatingAdmissionPolicy dispatcher introduces a rule's message
    (``staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go``)."""
    policy = POLICY_NAMES[policy]
    return ('runtimerollouts.operator.aicr.run "%s" is forbidden: ValidatingAdmissionPolicy \'%s\' with binding '
            "'%s-binding' denied request: " % (name, policy, policy))


def rule_rollout(server, case):
    status, spec, labels, _, _, _ = RULE_CASES[case]
    obj = rollout(new_id(), labels=labels)
    obj["spec"].update(json.loads(json.dumps(spec)))
    if status:
        obj["status"].update(status)
    return server.load([obj])[0]


@pytest.mark.parametrize("case", sorted(RULE_CASES))
@pytest.mark.parametrize("dry_run", [False, True], ids=["write", "dry-run"])
def test_the_operators_rules_deny_with_the_rules_message_and_store_nothing(any_server, case, dry_run):
    stored = rule_rollout(any_server, case)
    name = stored["metadata"]["name"]
    ops = RULE_CASES[case][3]
    query = "?dryRun=All" if dry_run else ""
    code, body = any_server.request("PATCH", RR + "/" + name + query, ops, user="bob@example.com",
                                    content_type=JSON_PATCH)
    policy, message = RULE_CASES[case][4:]
    prefix = denial_prefix(any_server, name, policy)
    # the cause is the dispatcher's message without the "<resource> is forbidden: " of admission.NewForbidden
    check_status(body, 422, "Invalid", prefix + message, {"name": name, "group": GROUP, "kind": "runtimerollouts",
                                                          "causes": [{"message": prefix.split(": ", 1)[1] + message}]})
    code, after = any_server.request("GET", RR + "/" + name, user="bob@example.com")
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


def test_an_approval_reason_over_1024_characters_is_422_and_stores_nothing(loaded):
    """The CRD schema (maxLength) answers before admission, on both servers."""
    server, name, stored = loaded
    ops = [{"op": "add", "path": "/spec/approval", "value": approval(reason="x" * 1025)}]
    code, body = server.request("PATCH", RR + "/" + name, ops, user="bob@example.com", content_type=JSON_PATCH)
    message = "Too long: may not be more than 1024 bytes"
    check_status(body, 422, "Invalid", 'RuntimeRollout.operator.aicr.run "%s" is invalid: spec.approval.reason: %s'
                 % (name, message), {"name": name, "group": GROUP, "kind": "RuntimeRollout", "causes": [
                     {"reason": "FieldValueTooLong", "message": message, "field": "spec.approval.reason"}]})
    code, after = server.request("GET", RR + "/" + name, user="bob@example.com")
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
