"""Tests of the test API server (tests/support/apiserver/) itself.

They talk to it as clients do: the standard library (http.client + ssl) and the real
kubectl. Expected Status bodies are the ones kube-apiserver writes; the source of each
is named in tests/support/apiserver/.
"""

import base64
import concurrent.futures
import datetime
import hashlib
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import urllib.parse

import pytest
import yaml

from tests.support import apiserver as api
from tests.support import certs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")
RR = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
CR = "/apis/operator.aicr.run/v1alpha1/clusterruntimes"
CM = "/api/v1/namespaces/aicr-system/configmaps"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def server():
    with api.APIServer(fixtures_dir=FIXTURES) as s:
        yield s


@pytest.fixture
def srv(server):
    """The module's server, with the store put back and the log cleared after each test."""
    saved = server.snapshot()
    server.clear_requests()
    yield server
    server.set_fault(None)
    server.restore(saved)


def tls_context(server, cert=None, password=None):
    ctx = ssl.create_default_context(cafile=server.ca_file)
    if cert:
        ctx.load_cert_chain(cert.cert, cert.key, password=password)
    return ctx


def connect(server, cert=None, host="127.0.0.1", server_hostname=None, timeout=10):
    ctx = tls_context(server, cert)
    conn = http.client.HTTPSConnection(host, server.port, context=ctx, timeout=timeout)
    if server_hostname:  # connect to the IP but send this name as SNI (and check it)
        conn.sock = ctx.wrap_socket(socket.create_connection((host, server.port), timeout),
                                    server_hostname=server_hostname)
    return conn


def call(server, method, path, user=None, body=None, content_type=None, headers=None, conn=None,
         cert=None):
    """One request -> (status, decoded JSON body or raw bytes). ``user``: bearer token user."""
    own = conn is None
    conn = conn or connect(server, cert)
    hdrs = dict(headers or {})
    if user:
        hdrs["Authorization"] = "Bearer " + server.token(user)
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    if content_type:
        hdrs["Content-Type"] = content_type
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
    finally:
        if own:
            conn.close()
    if resp.getheader("Content-Type", "").startswith("application/json"):
        return resp.status, json.loads(data)
    return resp.status, data


def patch(server, name, body, user="bob@example.com", kind=api.MERGE_PATCH, **kw):
    return call(server, "PATCH", RR + "/" + name, user, body, kind, **kw)


def assert_status(body, code, reason, message, details=None):
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert (body["code"], body["reason"], body["message"]) == (code, reason, message)
    if details is not None:
        assert body["details"] == details


def denial(name, policy, message):
    """The 422 a ValidatingAdmissionPolicy denial produces for a rollout."""
    cause = "ValidatingAdmissionPolicy '%s' with binding '%s-binding' denied request: %s" % (
        policy, policy, message)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'runtimerollouts.operator.aicr.run "%s" is forbidden: %s' % (name, cause),
            "reason": "Invalid",
            "details": {"name": name, "group": "operator.aicr.run", "kind": "runtimerollouts",
                        "causes": [{"message": cause}]},
            "code": 422}


def approval(user, reason="Maintenance window", expires="2030-01-01T00:00:00Z"):
    return {"spec": {"approval": {"user": user, "expires": expires, "reason": reason}}}


def run_kubectl(kubeconfig, *args, tmp_path):
    return subprocess.run([KUBECTL, "--kubeconfig", kubeconfig, "--cache-dir", str(tmp_path / "cache")]
                          + list(args), capture_output=True, text=True, timeout=30)


RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


# --------------------------------------------------------------------------- fixtures and store


def test_fixture_placeholders_resolve(server):
    ro = server.fixture("awaiting-approval")
    report = open(os.path.join(FIXTURES, "reports", "upgrade-candidate.json"), "rb").read()
    digest = "sha256:" + hashlib.sha256(report).hexdigest()
    assert ro["spec"]["assessment"]["digest"] == digest
    assert RFC3339.match(ro["spec"]["deadline"])
    to = ro["spec"]["to"]["desiredStateDigest"]
    assert re.match(r"^sha256:[0-9a-f]{64}$", to)
    assert ro["metadata"]["name"] == "rollout-%s-1" % to[7:23]
    cm = server.get_object("ConfigMap", "aicr-assessment-" + digest[7:23])
    assert cm["data"]["report.json"].encode() == report


def test_fixture_tampered_report_differs_from_recorded_digest(server):
    ro = server.fixture("tampered-report")
    recorded = ro["spec"]["assessment"]["digest"]
    cm = server.get_object("configmaps", "aicr-assessment-" + recorded[7:23])
    assert "sha256:" + hashlib.sha256(cm["data"]["report.json"].encode()).hexdigest() != recorded


def test_fixture_plans(server):
    cluster = server.get_object("ClusterRuntime", "cluster")
    for role, digest_key in (("plan-active", "activePlan"), ("plan-candidate", "candidatePlan")):
        plan, digest = server.fixture(role), cluster["status"][digest_key]
        assert plan["metadata"]["annotations"]["operator.aicr.run/desired-state-digest"] == digest
        assert plan["metadata"]["name"] == "aicr-plan-" + digest[7:23]
        data = plan["data"]
        assert data["recipeDigest"] == "sha256:" + hashlib.sha256(data["recipe.json"].encode()).hexdigest()
        assert isinstance(json.loads(data["renderFlags"]), list)
    assert "recipe.json" not in server.fixture("plan-applications")["data"]
    assert "renderFlags" not in server.fixture("plan-no-flags")["data"]
    bad = server.fixture("plan-recipe-mismatch")["data"]
    assert bad["recipeDigest"] != "sha256:" + hashlib.sha256(bad["recipe.json"].encode()).hexdigest()


def test_every_object_has_system_metadata(server):
    for plural in api.RESOURCES:
        for obj in server.store.list(plural)[0]:
            meta = obj["metadata"]
            assert meta["resourceVersion"].isdigit() and meta["uid"] and RFC3339.match(meta["creationTimestamp"])


def test_resolve_placeholder():
    now = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)
    r = lambda v: api.resolve_placeholder(v, FIXTURES, now)  # noqa: E731
    assert r("@now") == "2026-11-30T12:00:00Z"
    assert r("@now+2h") == "2026-11-30T14:00:00Z"
    assert r("@now-30m") == "2026-11-30T11:30:00Z"
    assert r("@now+1h30m") == "2026-11-30T13:30:00Z"
    assert r("@digest:x") == "sha256:" + hashlib.sha256(b"x").hexdigest()
    assert r("@plan-name:x") == "aicr-plan-" + hashlib.sha256(b"x").hexdigest()[:16]
    assert r("@rollout-name:x:2") == "rollout-%s-2" % hashlib.sha256(b"x").hexdigest()[:16]
    assert r("@@now") == "@now" and r("plain") == "plain" and r(5) == 5
    with pytest.raises(ValueError):
        r("@bogus:1")


def test_get_and_put_object(srv):
    name = srv.fixture_name("install")
    obj = srv.get_object("RuntimeRollout", name)
    rv = int(obj["metadata"]["resourceVersion"])
    obj["status"]["phase"] = "Validating"
    stored = srv.put_object(obj)
    assert int(stored["metadata"]["resourceVersion"]) > rv
    assert call(srv, "GET", RR + "/" + name, "carol@example.com")[1]["status"]["phase"] == "Validating"
    assert srv.delete_object("runtimerollouts", name) and srv.get_object("runtimerollouts", name) is None


# --------------------------------------------------------------------------- reading


def test_list_rollouts(server):
    code, body = call(server, "GET", RR, "carol@example.com")
    assert code == 200
    assert (body["kind"], body["apiVersion"]) == ("RuntimeRolloutList", "operator.aicr.run/v1alpha1")
    assert body["metadata"]["resourceVersion"].isdigit()
    names = [i["metadata"]["name"] for i in body["items"]]
    assert names == sorted(names) and len(names) == 13
    assert all(i["kind"] == "RuntimeRollout" and i["apiVersion"] == "operator.aicr.run/v1alpha1" for i in body["items"])


def test_get_rollout_clusterruntime_configmap(server):
    name = server.fixture_name("awaiting-approval")
    code, body = call(server, "GET", RR + "/" + name, "bob@example.com")
    assert code == 200 and body["metadata"]["name"] == name and body["status"]["phase"] == "AwaitingApproval"
    code, body = call(server, "GET", CR + "/cluster", "carol@example.com")
    assert code == 200 and body["kind"] == "ClusterRuntime" and body["status"]["activePlan"].startswith("sha256:")
    plan = server.fixture_name("plan-active")
    code, body = call(server, "GET", CM + "/" + plan, "carol@example.com")
    assert code == 200 and body["kind"] == "ConfigMap" and body["immutable"] is True


def test_list_configmaps_with_label_selectors(server):
    def names(selector):
        code, body = call(server, "GET", CM + "?labelSelector=" + urllib.parse.quote(selector), "carol@example.com")
        assert code == 200 and body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
        assert all("kind" not in i for i in body["items"])  # a typed list's items carry no kind
        return {i["metadata"]["name"] for i in body["items"]}

    plans, reports = names("operator.aicr.run/role=plan"), names("operator.aicr.run/role==assessment")
    assert len(plans) == 6 and all(n.startswith("aicr-plan-") for n in plans)
    assert len(reports) == 3 and all(n.startswith("aicr-assessment-") for n in reports)
    assert names("operator.aicr.run/role!=plan") == reports | {"aicr-operator-config"}
    assert names("operator.aicr.run/role") == plans | reports
    assert names("!operator.aicr.run/role") == {"aicr-operator-config"}
    assert names("operator.aicr.run/role in (plan, assessment)") == plans | reports
    assert names("operator.aicr.run/role notin (plan)") == reports | {"aicr-operator-config"}
    assert names("operator.aicr.run/role=plan,operator.aicr.run/role=assessment") == set()
    code, body = call(server, "GET", CM + "?labelSelector=a%3Db%2C", "carol@example.com")
    assert code == 400 and body["reason"] == "BadRequest"


def test_rollout_label_and_field_selectors(server):
    code, body = call(server, "GET", RR + "?labelSelector=operator.aicr.run/outcome", "carol@example.com")
    assert {i["metadata"]["labels"]["operator.aicr.run/outcome"] for i in body["items"]} == {
        "Succeeded", "Failed", "Expired", "Revoked"}
    name = server.fixture_name("install")
    code, body = call(server, "GET", RR + "?fieldSelector=metadata.name%3D" + name, "carol@example.com")
    assert [i["metadata"]["name"] for i in body["items"]] == [name]


def test_not_found_bodies(server):
    code, body = call(server, "GET", RR + "/nope", "carol@example.com")
    assert code == 404
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'runtimerollouts.operator.aicr.run "nope" not found', "reason": "NotFound",
                    "details": {"name": "nope", "group": "operator.aicr.run", "kind": "runtimerollouts"},
                    "code": 404}
    code, body = call(server, "GET", CM + "/nope", "carol@example.com")
    assert_status(body, 404, "NotFound", 'configmaps "nope" not found', {"name": "nope", "kind": "configmaps"})


def test_unknown_paths(server):
    # authorised but not served under /apis: Go's plain-text 404, not a Status (as a real
    # kube-apiserver answers; tests/test_contract.py checks it against one)
    path = "/apis/operator.aicr.run/v1alpha1/namespaces/x/clusterruntimes"
    assert call(server, "GET", path, "bob@example.com") == (404, b"404 page not found\n")
    assert call(server, "GET", "/apis/example.com/v1/things", "admin") == (404, b"404 page not found\n")
    # ... and in a built-in API: a Status with the generic message
    code, body = call(server, "GET", "/api/v1/things", "admin")
    assert_status(body, 404, "NotFound", "the server could not find the requested resource", {})
    # not authorised: RBAC answers first, as in kube-apiserver
    code, body = call(server, "GET", "/apis/example.com/v1/things", "bob@example.com")
    assert_status(body, 403, "Forbidden", 'things.example.com is forbidden: User "bob@example.com" cannot '
                  'list resource "things" in API group "example.com" at the cluster scope')
    code, body = call(server, "GET", "/healthz/nothing", "bob@example.com")
    assert_status(body, 403, "Forbidden", 'forbidden: User "bob@example.com" cannot get path "/healthz/nothing"', {})


def test_discovery(server):
    assert call(server, "GET", "/version")[1]["gitVersion"].startswith("v1.")
    assert call(server, "GET", "/api", "mallory@example.com")[1]["versions"] == ["v1"]
    groups = call(server, "GET", "/apis", "mallory@example.com")[1]["groups"]
    assert "operator.aicr.run" in [g["name"] for g in groups]
    resources = call(server, "GET", "/apis/operator.aicr.run/v1alpha1", "carol@example.com")[1]["resources"]
    expected = {"name": "runtimerollouts", "kind": "RuntimeRollout", "namespaced": False}
    assert expected.items() <= resources[0].items()
    code, body = call(server, "GET", "/apis")
    assert_status(body, 403, "Forbidden", 'forbidden: User "system:anonymous" cannot get path "/apis"')


# --------------------------------------------------------------------------- authentication


def test_invalid_token_is_401(server):
    code, body = call(server, "GET", RR, headers={"Authorization": "Bearer not-a-token"})
    assert code == 401
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def test_no_credentials_is_anonymous(server):
    code, body = call(server, "GET", RR + "/x")
    assert_status(body, 403, "Forbidden", 'runtimerollouts.operator.aicr.run "x" is forbidden: User '
                  '"system:anonymous" cannot get resource "runtimerollouts" in API group "operator.aicr.run" '
                  'at the cluster scope')
    code, body = call(server, "POST", SSR, body={}, content_type="application/json")
    assert_status(body, 403, "Forbidden", 'selfsubjectreviews.authentication.k8s.io is forbidden: User '
                  '"system:anonymous" cannot create resource "selfsubjectreviews" in API group '
                  '"authentication.k8s.io" at the cluster scope')
    # basic auth is off by default: the header is ignored, as kube-apiserver (1.19+) does
    code, _ = call(server, "GET", RR, headers={"Authorization": "Basic YTpi"})
    assert code == 403


def test_self_subject_review_token_user(server):
    review = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "metadata": {}}
    code, body = call(server, "POST", SSR, "bob@example.com", review, "application/json")
    assert code == 201
    assert body == {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
                    "metadata": {"creationTimestamp": None},
                    "status": {"userInfo": {"username": "bob@example.com", "uid": server.users["bob@example.com"].uid,
                                            "groups": ["aicr-approvers", "system:authenticated"]}}}


def test_client_certificate_user(server):
    cert = server.client_cert_files("alice@example.com")
    assert "BEGIN RSA PRIVATE KEY" in open(cert.key).read()
    code, body = call(server, "POST", SSR, body={}, content_type="application/json", cert=cert)
    assert code == 201 and body["status"]["userInfo"] == {
        "username": "alice@example.com", "groups": ["aicr-approvers", "system:authenticated"]}
    rec = server.requests[-1]
    assert rec.client_cert == {"cn": "alice@example.com", "o": ["aicr-approvers"]} and rec.user == "alice@example.com"
    # a valid certificate wins over a bad token (kube-apiserver tries x509 first)
    code, _ = call(server, "GET", RR, cert=cert, headers={"Authorization": "Bearer wrong"})
    assert code == 200


@pytest.mark.parametrize("key_type,key_format,passphrase,marker", [
    ("ec", "traditional", None, "BEGIN EC PRIVATE KEY"),
    ("rsa", "pkcs8", None, "BEGIN PRIVATE KEY"),
    ("ec", "pkcs8", "s3cret", "BEGIN ENCRYPTED PRIVATE KEY"),
])
def test_client_certificate_key_variants(server, key_type, key_format, passphrase, marker):
    cert = server.client_cert_files("carol@example.com", key_type, key_format, passphrase)
    assert marker in open(cert.key).read()
    conn = http.client.HTTPSConnection("127.0.0.1", server.port,
                                       context=tls_context(server, cert, passphrase), timeout=10)
    conn.request("GET", RR)
    assert conn.getresponse().status == 200
    conn.close()


def test_multiple_organizations_are_groups(tmp_path, server):
    files = certs.write_client_cert(server.ca, str(tmp_path), "multi", "dave", ["g1", "aicr-readers"])
    code, body = call(server, "POST", SSR, body={}, content_type="application/json", cert=files)
    assert body["status"]["userInfo"]["groups"] == ["g1", "aicr-readers", "system:authenticated"]


def test_untrusted_client_certificate_fails_handshake(tmp_path, server):
    other = certs.make_ca()
    files = certs.write_client_cert(other, str(tmp_path), "evil", "alice@example.com", ["aicr-approvers"])
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        call(server, "GET", RR, cert=files)


def test_basic_auth_when_enabled(tmp_path):
    users = [api.User("zoë@example.com", (api.READERS,), password="pässwörd")]
    with api.APIServer(fixtures_dir=FIXTURES, users=users, basic_auth=True) as s:
        good = base64.b64encode("zoë@example.com:pässwörd".encode()).decode()
        bad = base64.b64encode(b"x:y").decode()
        assert call(s, "GET", RR, headers={"Authorization": "Basic " + good})[0] == 200
        code, body = call(s, "GET", RR, headers={"Authorization": "Basic " + bad})
        assert code == 401 and body["message"] == "Unauthorized"


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("user,path,code", [
    ("carol@example.com", RR, 200), ("carol@example.com", CR, 200), ("carol@example.com", CM, 200),
    ("bob@example.com", RR, 200), ("bob@example.com", CM, 200),
    ("mallory@example.com", RR, 403), ("mallory@example.com", CM, 403),
    ("carol@example.com", "/api/v1/namespaces/default/configmaps", 403),
    ("carol@example.com", "/api/v1/configmaps", 403),
    ("admin", "/api/v1/configmaps", 200),
])
def test_read_permissions(server, user, path, code):
    assert call(server, "GET", path, user)[0] == code


def test_forbidden_messages(server):
    code, body = call(server, "GET", RR + "/x", "mallory@example.com")
    assert_status(body, 403, "Forbidden", 'runtimerollouts.operator.aicr.run "x" is forbidden: User '
                  '"mallory@example.com" cannot get resource "runtimerollouts" in API group "operator.aicr.run" '
                  'at the cluster scope', {"name": "x", "group": "operator.aicr.run", "kind": "runtimerollouts"})
    code, body = call(server, "GET", CM + "/x", "mallory@example.com")
    assert_status(body, 403, "Forbidden", 'configmaps "x" is forbidden: User "mallory@example.com" cannot get '
                  'resource "configmaps" in API group "" in the namespace "aicr-system"',
                  {"name": "x", "kind": "configmaps"})
    code, body = call(server, "GET", RR, "mallory@example.com")
    assert_status(body, 403, "Forbidden", 'runtimerollouts.operator.aicr.run is forbidden: User '
                  '"mallory@example.com" cannot list resource "runtimerollouts" in API group '
                  '"operator.aicr.run" at the cluster scope', {"group": "operator.aicr.run", "kind": "runtimerollouts"})
    name = server.fixture_name("awaiting-approval")
    code, body = patch(server, name, approval("carol@example.com"), user="carol@example.com")
    assert_status(body, 403, "Forbidden", 'runtimerollouts.operator.aicr.run "%s" is forbidden: User '
                  '"carol@example.com" cannot patch resource "runtimerollouts" in API group '
                  '"operator.aicr.run" at the cluster scope' % name)
    code, body = call(server, "PATCH", RR + "/" + name + "/status", "bob@example.com", {}, api.MERGE_PATCH)
    assert code == 403 and 'cannot patch resource "runtimerollouts/status"' in body["message"]
    assert call(server, "POST", SSR, "mallory@example.com", {}, "application/json")[0] == 201


def test_impersonation(srv):
    code, body = call(srv, "GET", RR, "bob@example.com", headers={"Impersonate-User": "carol@example.com"})
    assert_status(body, 403, "Forbidden", 'users "carol@example.com" is forbidden: User "bob@example.com" cannot '
                  'impersonate resource "users" in API group "" at the cluster scope')
    code, body = call(srv, "POST", SSR, "admin", {}, "application/json",
                      headers={"Impersonate-User": "carol@example.com", "Impersonate-Group": "aicr-readers"})
    assert code == 201 and body["status"]["userInfo"]["username"] == "carol@example.com"
    rec = srv.requests[-1]
    assert rec.impersonation == {"Impersonate-User": ["carol@example.com"], "Impersonate-Group": ["aicr-readers"]}


# --------------------------------------------------------------------------- patch


def test_merge_patch_approves_and_bumps_resource_version(srv):
    name = srv.fixture_name("awaiting-approval")
    before = srv.get_object("RuntimeRollout", name)
    body = approval("bob@example.com")
    body["status"] = {"phase": "Completed"}  # status is not written through the main resource
    code, obj = patch(srv, name, body)
    assert code == 200
    assert obj["spec"]["approval"]["user"] == "bob@example.com" and obj["status"]["phase"] == "AwaitingApproval"
    assert int(obj["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert obj["metadata"]["generation"] == before["metadata"]["generation"] + 1
    assert srv.get_object("RuntimeRollout", name) == obj
    # a no-op patch is not a write
    code, again = patch(srv, name, {"metadata": {"labels": None}})
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_merge_patch_resource_version_conflict(srv):
    name = srv.fixture_name("awaiting-approval")
    rv = srv.get_object("RuntimeRollout", name)["metadata"]["resourceVersion"]
    body = approval("bob@example.com")
    body["metadata"] = {"resourceVersion": "1"}
    code, resp = patch(srv, name, body)
    assert_status(resp, 409, "Conflict", 'Operation cannot be fulfilled on runtimerollouts.operator.aicr.run "%s": '
                  'the object has been modified; please apply your changes to the latest version and try again'
                  % name, {"name": name, "group": "operator.aicr.run", "kind": "runtimerollouts"})
    body["metadata"] = {"resourceVersion": rv}
    assert patch(srv, name, body)[0] == 200


def test_json_patch_operations(srv):
    name = srv.fixture_name("awaiting-approval")
    rv = srv.get_object("RuntimeRollout", name)["metadata"]["resourceVersion"]
    ops = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": rv},
        {"op": "test", "path": "/spec/approval", "value": None},  # absent + null: passes (json-patch v4)
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/example.com~1tilde~0slash", "value": "x"},
        {"op": "add", "path": "/spec/approval", "value": {"user": "bob@example.com", "reason": "r",
                                                          "expires": "2030-01-01T00:00:00Z"}},
        {"op": "copy", "from": "/spec/approval/reason", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/labels/copied", "path": "/metadata/labels/moved"},
        {"op": "replace", "path": "/metadata/labels/moved", "value": "y"},
        {"op": "remove", "path": "/metadata/labels/moved"},
    ]
    code, obj = patch(srv, name, ops, kind=api.JSON_PATCH)
    assert code == 200, obj
    assert obj["metadata"]["labels"] == {"example.com/tilde~slash": "x"}
    assert obj["spec"]["approval"]["reason"] == "r"


@pytest.mark.parametrize("ops", [
    [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"}],
    [{"op": "test", "path": "/spec/approvalRequired", "value": None}],
    [{"op": "remove", "path": "/spec/nothing"}],
    [{"op": "add", "path": "/spec/no/such/parent", "value": 1}],
    [{"op": "replace", "path": "/spec/steps/99", "value": 1}],
    [{"op": "frobnicate", "path": "/spec"}],
])
def test_json_patch_that_does_not_apply_is_422(srv, ops):
    code, body = patch(srv, srv.fixture_name("awaiting-approval"), ops, kind=api.JSON_PATCH)
    assert_status(body, 422, "Invalid", "the server rejected our request due to an error in our request", {})


def test_malformed_patch_bodies_are_400(srv):
    name = srv.fixture_name("awaiting-approval")
    code, body = patch(srv, name, b"{not json", kind=api.JSON_PATCH)
    assert code == 400 and body["reason"] == "BadRequest"
    code, body = patch(srv, name, {"op": "add"}, kind=api.JSON_PATCH)
    assert_status(body, 400, "BadRequest", "error decoding patch: json: cannot unmarshal object into Go value of "
                                           "type []handlers.jsonPatchOp")
    code, body = patch(srv, name, b"null")
    assert_status(body, 400, "BadRequest", "Invalid JSON Patch")


def test_unsupported_patch_types_are_415(srv):
    name = srv.fixture_name("awaiting-approval")
    code, body = patch(srv, name, approval("bob@example.com"), kind=api.STRATEGIC_PATCH)
    assert_status(body, 415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                  "media types include: application/json-patch+json, application/merge-patch+json, "
                  "application/apply-patch+yaml")
    code, body = patch(srv, name, b"spec: {}", kind=api.APPLY_PATCH)
    assert code == 415 and body["reason"] == "UnsupportedMediaType"


def test_body_limit_is_413(srv):
    code, body = patch(srv, srv.fixture_name("awaiting-approval"), b" " * (api.MAX_BODY + 1))
    assert_status(body, 413, "RequestEntityTooLarge", "Request entity too large: limit is %d" % api.MAX_BODY)


def test_patch_missing_object_is_404(srv):
    code, body = patch(srv, "nope", approval("bob@example.com"))
    assert code == 404 and body["message"] == 'runtimerollouts.operator.aicr.run "nope" not found'


def test_system_fields(srv):
    name = srv.fixture_name("awaiting-approval")
    code, body = patch(srv, name, {"metadata": {"name": "other"}})
    assert_status(body, 400, "BadRequest",
                  "the name of the object (other) does not match the name on the URL (%s)" % name)
    code, body = patch(srv, name, {"metadata": {"uid": "1234"}})
    assert_status(body, 422, "Invalid", 'RuntimeRollout.operator.aicr.run "%s" is invalid: metadata.uid: '
                  'Invalid value: "1234": field is immutable' % name)
    code, obj = patch(srv, name, [{"op": "remove", "path": "/metadata/uid"}], kind=api.JSON_PATCH)
    assert code == 200 and obj["metadata"]["uid"] == srv.fixture("awaiting-approval")["metadata"]["uid"]


def test_concurrent_patches_exactly_one_wins(srv):
    name = srv.fixture_name("awaiting-approval")
    rv = srv.get_object("RuntimeRollout", name)["metadata"]["resourceVersion"]
    users = ["approver-%02d" % i for i in range(1, 21)]
    barrier = threading.Barrier(len(users))

    def approve(user):
        conn = connect(srv)
        conn.connect()
        barrier.wait()
        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
               {"op": "add", "path": "/spec/approval",
                "value": {"user": user, "reason": "race", "expires": "2030-01-01T00:00:00Z"}}]
        try:
            return user, call(srv, "PATCH", RR + "/" + name, user, ops, api.JSON_PATCH, conn=conn)
        finally:
            conn.close()

    with concurrent.futures.ThreadPoolExecutor(len(users)) as pool:
        results = list(pool.map(approve, users))
    winners = [(u, body) for u, (code, body) in results if code == 200]
    assert len(winners) == 1
    assert sorted(code for _, (code, _) in results) == [200] + [422] * 19
    assert srv.get_object("RuntimeRollout", name)["spec"]["approval"]["user"] == winners[0][0]


# --------------------------------------------------------------------------- admission


def test_approval_rules(srv):
    name = srv.fixture_name("awaiting-approval")
    p = "aicr-rollout-approval"
    assert patch(srv, name, approval("alice@example.com"))[1] == denial(
        name, p, 'spec.approval.user must be the requesting user "bob@example.com"')
    assert patch(srv, name, approval("bob@example.com", reason=""))[1] == denial(
        name, p, "spec.approval.reason must be 1 to 1024 characters")
    code, body = patch(srv, name, approval("bob@example.com", reason="x" * 1025))  # the CRD schema answers first
    assert (code, body["details"]["causes"]) == (422, [{"reason": "FieldValueTooLong", "field": "spec.approval.reason",
                                                       "message": "Too long: may not be more than 1024 bytes"}])
    assert patch(srv, name, approval("bob@example.com", expires="tomorrow"))[1] == denial(
        name, p, "spec.approval.expires must be an RFC 3339 time")
    no_expiry = approval("bob@example.com")
    del no_expiry["spec"]["approval"]["expires"]
    assert patch(srv, name, no_expiry)[1] == denial(name, p, "spec.approval.expires must be an RFC 3339 time")
    assert patch(srv, name, approval("bob@example.com", reason="é" * 1024))[0] == 200  # characters, not bytes
    for change in (approval("bob@example.com", reason="other"), {"spec": {"approval": None}}):
        assert patch(srv, name, change)[1] == denial(
            name, p, "spec.approval is set once and cannot be changed or removed")


def test_revocation_rules(srv):
    p = "aicr-rollout-revocation"

    def revoke(role, user="bob@example.com", as_user="bob@example.com"):
        name = srv.fixture_name(role)
        body = {"spec": {"revocation": {"user": user, "time": "2026-11-30T10:00:00Z", "reason": "r"}}}
        return name, patch(srv, name, body, user=as_user)

    name, (code, body) = revoke("awaiting-approval")
    assert body == denial(name, p, "spec.revocation requires spec.approval")
    name, (code, body) = revoke("validating")
    assert body == denial(name, p, "spec.revocation cannot be set while status.phase is Validating")
    for role in ("expired", "succeeded"):
        name, (code, body) = revoke(role)
        assert body == denial(name, p, "spec.revocation cannot be set after the rollout has ended")
    name, (code, body) = revoke("approved-rolling-out", user="alice@example.com")
    assert body == denial(name, p, 'spec.revocation.user must be the requesting user "bob@example.com"')
    name, (code, body) = revoke("approved-rolling-out")
    assert code == 200 and body["spec"]["revocation"]["user"] == "bob@example.com"
    name, (code, body) = revoke("approved-rolling-out", user="alice@example.com", as_user="alice@example.com")
    assert body == denial(name, p, "spec.revocation is set once and cannot be changed or removed")


def test_acknowledgement_rules(srv):
    p = "aicr-rollout-acknowledgements"
    name = srv.fixture_name("awaiting-acknowledgement")
    earlier = srv.fixture("awaiting-acknowledgement")["spec"]["acknowledgements"]

    def ack(entries, user="bob@example.com", target=name):
        return patch(srv, target, {"spec": {"acknowledgements": entries}}, user=user)[1]

    entry = {"release": "nvsentinel", "user": "bob@example.com", "time": "2026-11-30T10:30:00Z"}
    assert ack([]) == denial(name, p, "spec.acknowledgements is append-only")
    assert ack([entry]) == denial(name, p, "spec.acknowledgements is append-only")
    assert ack(earlier + [dict(entry, release="gpu-operator")]) == denial(
        name, p, "a new spec.acknowledgements entry must name the release in "
                 'status.awaitingAcknowledgement ("nvsentinel")')
    assert ack(earlier + [dict(entry, user="alice@example.com")]) == denial(
        name, p, 'a new spec.acknowledgements entry must name the requesting user "bob@example.com"')
    other = srv.fixture_name("approved-rolling-out")
    assert ack([entry], target=other) == denial(other, p, "a new spec.acknowledgements entry needs a release in "
                                                          "status.awaitingAcknowledgement, and there is none")
    ok = ack(earlier + [entry])
    assert ok["spec"]["acknowledgements"] == earlier + [entry]


def test_immutable_fields(srv):
    p = "aicr-rollout-immutable"
    name = srv.fixture_name("awaiting-approval")
    assert patch(srv, name, {"spec": {"deadline": "2030-01-01T00:00:00Z"}})[1] == denial(
        name, p, "spec.deadline is immutable")
    assert patch(srv, name, {"spec": {"extra": 1}})[1] == denial(name, p, "spec.extra is immutable")
    assert patch(srv, name, {"metadata": {"labels": {"operator.aicr.run/outcome": "Succeeded"}}})[1] == denial(
        name, p, "the label operator.aicr.run/outcome is immutable")
    ended = srv.fixture_name("succeeded")
    assert patch(srv, ended, {"metadata": {"labels": {"operator.aicr.run/outcome": None}}})[1] == denial(
        ended, p, "the label operator.aicr.run/outcome is immutable")
    assert patch(srv, name, {"metadata": {"labels": {"team": "gpu"}}})[0] == 200


# --------------------------------------------------------------------------- connections and log


def test_keep_alive_and_request_log(srv):
    conn = connect(srv)
    call(srv, "GET", RR, "carol@example.com", conn=conn, headers={"User-Agent": "probe/1"})
    call(srv, "GET", CM + "?labelSelector=x", "carol@example.com", conn=conn)
    conn.close()
    call(srv, "GET", RR, "carol@example.com")
    first, second, third = srv.requests
    assert first.connection_id == second.connection_id != third.connection_id
    assert (second.method, second.path, second.query) == ("GET", CM, "labelSelector=x")
    assert first.authorization == "Bearer " + srv.token("carol@example.com") and first.user_agent == "probe/1"
    assert first.status == 200 and first.user == "carol@example.com" and first.client_cert is None
    srv.clear_requests()
    assert srv.requests == []


def test_sni_is_recorded(srv):
    conn = connect(srv, server_hostname="localhost")
    call(srv, "GET", "/version", conn=conn)
    conn.close()
    call(srv, "GET", "/version")  # clients send no SNI for an IP address
    assert [r.sni for r in srv.requests] == ["localhost", None]


def test_patch_request_is_logged(srv):
    name = srv.fixture_name("awaiting-approval")
    patch(srv, name, approval("bob@example.com"), headers={"Impersonate-Uid": "u"})
    rec = srv.requests[-1]
    assert rec.content_type == api.MERGE_PATCH and json.loads(rec.body) == approval("bob@example.com")
    assert rec.impersonation == {"Impersonate-Uid": ["u"]} and rec.status == 400


# --------------------------------------------------------------------------- faults


def test_faults(srv):
    srv.set_fault("html-500", count=1)
    code, body = call(srv, "GET", RR, "carol@example.com")
    assert code == 500 and b"<html>" in body
    assert call(srv, "GET", RR, "carol@example.com")[0] == 200  # count=1: the next one is normal
    srv.fault = "redirect"
    conn = connect(srv)
    conn.request("GET", RR)
    resp = conn.getresponse()
    assert resp.status == 302 and resp.getheader("Location").startswith("https://sso.example.invalid/")
    srv.fault = "reset"
    with pytest.raises((ConnectionError, http.client.HTTPException, ssl.SSLError)):
        call(srv, "GET", RR, "carol@example.com")
    srv.fault = "close-mid-body"
    with pytest.raises(http.client.IncompleteRead):
        call(srv, "GET", RR, "carol@example.com")
    srv.fault, srv.fault_hang_seconds = "hang", 5
    with pytest.raises((socket.timeout, TimeoutError)):
        call(srv, "GET", RR, "carol@example.com", conn=connect(srv, timeout=0.3))
    srv.fault, srv.fault_delay = "trickle", 0.2
    conn = connect(srv, timeout=0.5)
    conn.request("GET", "/version")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.read(1) == b"{"
    conn.close()
    srv.fault, srv.fault_huge_bytes = "huge", 3 * 1024 * 1024
    conn = connect(srv)
    conn.request("GET", RR)
    resp = conn.getresponse()
    assert resp.status == 200 and int(resp.getheader("Content-Length")) == 3 * 1024 * 1024
    assert len(resp.read()) == 3 * 1024 * 1024
    conn.close()
    srv.fault = None
    assert [r.fault for r in srv.requests][:2] == ["html-500", None]


# --------------------------------------------------------------------------- kubeconfig and kubectl


@pytest.mark.parametrize("user,style,ca", [
    ("alice@example.com", "cert-files", "file"),
    ("alice@example.com", "cert-data", "data"),
    ("bob@example.com", "token", "file"),
])
def test_kubectl_with_kubeconfig_styles(server, tmp_path, user, style, ca):
    path = server.write_kubeconfig(str(tmp_path / "config"), user=user, style=style, ca=ca)
    config = yaml.safe_load(open(path))
    assert config["kind"] == "Config" and config["current-context"] == user.split("@")[0]
    out = run_kubectl(path, "get", "--raw", RR, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["kind"] == "RuntimeRolloutList"


def test_kubectl_get_by_resource_name_and_errors(server, tmp_path):
    path = server.write_kubeconfig_all(str(tmp_path / "config"))
    out = run_kubectl(path, "get", "runtimerollouts.operator.aicr.run", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert server.fixture_name("install") in out.stdout
    out = run_kubectl(path, "--context", "mallory", "get", "aicrro", tmp_path=tmp_path)
    assert out.returncode != 0 and 'User "mallory@example.com" cannot list resource "runtimerollouts"' in out.stderr


def test_program_mode(tmp_path):
    outdir = tmp_path / "demo"
    command = [sys.executable, "-m", "tests.support.apiserver", "--fixtures", FIXTURES, "--dir", str(outdir)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert re.match(r"^https://127\.0\.0\.1:\d+$", url), proc.stderr.read()
        assert proc.stdout.readline().strip() == "export KUBECONFIG=%s" % (outdir / "kubeconfig")
        config = yaml.safe_load(open(outdir / "kubeconfig"))
        contexts = {c["name"] for c in config["contexts"]}
        assert {"alice", "bob", "carol", "mallory", "approver-20"} <= contexts
        assert config["current-context"] == "alice" and config["clusters"][0]["cluster"]["server"] == url
        out = run_kubectl(str(outdir / "kubeconfig"), "get", "--raw", RR, tmp_path=tmp_path)
        assert out.returncode == 0, out.stderr
        assert len(json.loads(out.stdout)["items"]) == 13
        out = run_kubectl(str(outdir / "kubeconfig"), "--context", "carol", "get", "--raw", CM, tmp_path=tmp_path)
        assert out.returncode == 0, out.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
