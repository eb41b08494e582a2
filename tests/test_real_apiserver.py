"""Smoke test of the real kube-apiserver tier (tests/support/real_apiserver.py).

Run with ``make test-real`` (needs ``make real-apiserver`` first). Skipped when the
binaries are not built, unless AICR_REQUIRE_REAL_APISERVER=1.

``test_status_bodies`` records the exact Status bodies the real server answers; with
AICR_REAL_OBSERVED_OUT=PATH it writes them as Markdown (tests/real_apiserver_observed.md
was made that way).
"""

import json
import os
import shutil
import subprocess

import pytest

try:
    from tests.support.real_apiserver import RealAPIServer, read_versions, real_apiserver  # noqa: F401
except ImportError:  # tests/ itself on sys.path
    from real_apiserver import RealAPIServer, read_versions, real_apiserver  # noqa: F401

pytestmark = pytest.mark.real

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUP_PATH = "/apis/operator.aicr.run/v1alpha1"
ROLLOUTS = GROUP_PATH + "/runtimerollouts"
DIGEST = "sha256:" + "5e" * 32
RUNTIME_UID = "6f0c1b2e-5d4a-4c3b-9a8f-7e6d5c4b3a21"


def rollout(name, **spec):
    body = {
        "runtimeRef": {"name": "cluster", "uid": RUNTIME_UID},
        "from": None,
        "to": {"desiredStateDigest": DIGEST},
        "deadline": "2026-11-30T12:00:00Z",
        "approvalRequired": True,
        "startingInventory": {"releases": 0, "digest": DIGEST},
        "steps": [{"release": "gpu-operator", "operation": "Install", "assessment": "safe",
                   "changesCRDs": True, "futureField": {"kept": True}}],
    }
    body.update(spec)
    return {
        "apiVersion": "operator.aicr.run/v1alpha1", "kind": "RuntimeRollout",
        "metadata": {"name": name, "uid": "0d1e2f30-0000-0000-0000-000000000001",
                     "labels": {"test.aicr.run/real": "smoke"}},
        "spec": body,
        "status": {"phase": "AwaitingApproval", "outcome": "", "message": "Waiting for an approval.",
                   "steps": [{"release": "gpu-operator", "state": "Pending"}]},
    }


def smoke_objects():
    return [
        rollout("rollout-5e5e5e5e5e5e5e5e-1"),
        rollout("rollout-5e5e5e5e5e5e5e5e-2"),
        {"apiVersion": "operator.aicr.run/v1alpha1", "kind": "ClusterRuntime",
         "metadata": {"name": "cluster"}, "spec": {},
         "status": {"activePlan": DIGEST, "candidatePlan": DIGEST}},
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "aicr-plan-5e5e5e5e5e5e5e5e", "namespace": "aicr-system",
                      "labels": {"operator.aicr.run/role": "plan"},
                      "annotations": {"operator.aicr.run/desired-state-digest": DIGEST}},
         "immutable": True, "data": {"recipe.json": "{}"}},
    ]


@pytest.fixture(scope="module")
def loaded(real_apiserver):
    return real_apiserver.load_objects(smoke_objects())


def kubectl():
    path = os.path.join(ROOT, ".venv", "bin", "kubectl")
    return path if os.access(path, os.X_OK) else shutil.which("kubectl")


def test_server_version_and_crds(real_apiserver):
    code, version = real_apiserver.request("GET", "/version")
    assert code == 200
    assert version["gitVersion"] == real_apiserver.version
    assert real_apiserver.version_line == "Kubernetes " + real_apiserver.version
    for name in ("runtimerollouts.operator.aicr.run", "clusterruntimes.operator.aicr.run"):
        code, crd = real_apiserver.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name)
        assert code == 200
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions.get("Established") == "True", conditions
        assert conditions.get("NamesAccepted") == "True", conditions
    code, discovery = real_apiserver.request("GET", GROUP_PATH, user="carol@example.com")
    assert code == 200
    by_name = {r["name"]: r for r in discovery["resources"]}
    assert by_name["runtimerollouts"]["namespaced"] is False
    assert by_name["runtimerollouts"]["shortNames"] == ["aicrro"]
    assert by_name["clusterruntimes"]["shortNames"] == ["aicrrt"]
    assert "runtimerollouts/status" in by_name and "clusterruntimes/status" in by_name
    code, ns = real_apiserver.request("GET", "/api/v1/namespaces/aicr-system")
    assert code == 200 and ns["status"]["phase"] == "Active"


def test_objects_load(real_apiserver, loaded):
    assert [o["metadata"]["name"] for o in loaded] == [
        "rollout-5e5e5e5e5e5e5e5e-1", "rollout-5e5e5e5e5e5e5e5e-2", "cluster", "aicr-plan-5e5e5e5e5e5e5e5e"]
    got = real_apiserver.get("operator.aicr.run/v1alpha1", "RuntimeRollout", "rollout-5e5e5e5e5e5e5e5e-1",
                             user="carol@example.com")
    assert got["status"]["phase"] == "AwaitingApproval"          # written through /status
    assert got["spec"]["from"] is None                            # nullable, kept as null
    assert got["spec"]["steps"][0]["futureField"] == {"kept": True}   # unknown fields preserved
    assert got["metadata"]["uid"] != "0d1e2f30-0000-0000-0000-000000000001"  # the server's own uid
    runtime = real_apiserver.get("operator.aicr.run/v1alpha1", "ClusterRuntime", "cluster")
    assert runtime["status"]["activePlan"] == DIGEST
    # loading again replaces (no AlreadyExists error)
    again = real_apiserver.load_objects(smoke_objects()[:1])
    assert again[0]["status"]["phase"] == "AwaitingApproval"


def test_team_fixtures_load(real_apiserver):
    """tests/fixtures (placeholders resolved by tests/support/apiserver/) fit the real CRDs."""
    try:
        try:
            from tests.support.apiserver import load_fixtures
        except ImportError:
            from apiserver import load_fixtures
    except ImportError as e:
        pytest.skip("tests/support/apiserver/ has no load_fixtures: %s" % e)
    objects = load_fixtures(os.path.join(ROOT, "tests", "fixtures"))
    stored = real_apiserver.load_objects(objects)
    assert len(stored) == len(objects)
    for want, got in zip(objects, stored):
        if want["kind"] == "RuntimeRollout":
            assert got["spec"] == want["spec"], want["metadata"]["name"]
            assert got.get("status") == want.get("status"), want["metadata"]["name"]


def test_kubectl_get_raw_as_alice(real_apiserver, loaded, tmp_path):
    exe = kubectl()
    if exe is None:
        pytest.skip("no kubectl in .venv/bin or on PATH")
    config = real_apiserver.write_kubeconfig(str(tmp_path / "alice"), user="alice@example.com",
                                             style="cert-files")
    out = subprocess.run([exe, "--kubeconfig", config, "get", "--raw", ROLLOUTS],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    names = [i["metadata"]["name"] for i in json.loads(out.stdout)["items"]]
    assert "rollout-5e5e5e5e5e5e5e5e-1" in names
    config = real_apiserver.write_kubeconfig(str(tmp_path / "carol"), user="carol@example.com")
    out = subprocess.run([exe, "--kubeconfig", config, "get", "aicrro", "-o", "name"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "runtimerollout.operator.aicr.run/rollout-5e5e5e5e5e5e5e5e-1" in out.stdout.split()


def test_permissions(real_apiserver, loaded):
    name = ROLLOUTS + "/rollout-5e5e5e5e5e5e5e5e-1"
    assert real_apiserver.request("GET", ROLLOUTS, user="mallory@example.com")[0] == 403
    assert real_apiserver.request("GET", ROLLOUTS, token="not-a-token")[0] == 401
    assert real_apiserver.request("GET", name, user="carol@example.com")[0] == 200
    assert real_apiserver.request("GET", "/api/v1/namespaces/aicr-system/configmaps",
                                  user="carol@example.com")[0] == 200
    assert real_apiserver.request("GET", "/api/v1/namespaces/default/configmaps",
                                  user="carol@example.com")[0] == 403
    patch = {"metadata": {"annotations": {"test.aicr.run/touched": "yes"}}}
    assert real_apiserver.request("PATCH", name, patch, user="carol@example.com",
                                  content_type="application/merge-patch+json")[0] == 403
    for user in ("alice@example.com", "bob@example.com"):
        code, body = real_apiserver.request("PATCH", name, patch, user=user,
                                            content_type="application/merge-patch+json")
        assert code == 200, body


# ---------------------------------------------------------------------------- Status bodies


def observe(server):
    """Make each request of interest; return [(title, request text, code, body)]."""
    rows = []
    name = "rollout-5e5e5e5e5e5e5e5e-2"
    item = ROLLOUTS + "/" + name

    def record(title, method, path, body=None, ctype=None, **who):
        code, raw = server.request(method, path, body, content_type=ctype, raw=True, **who)
        ident = who.get("user") or ("token %r" % who["token"] if "token" in who else "anonymous")
        text = "%s %s as %s" % (method, path, ident)
        if ctype:
            text += "\nContent-Type: %s" % ctype
        if body is not None:
            text += "\n" + json.dumps(body)
        rows.append((title, text, code, raw))
        return code, raw

    record("404: a rollout that does not exist", "GET", ROLLOUTS + "/rollout-0000000000000000-9",
           user="alice@example.com")
    record("403: list rollouts without rights", "GET", ROLLOUTS, user="mallory@example.com")
    record("403: a rollout that does not exist, without rights", "GET", ROLLOUTS + "/rollout-0000000000000000-9",
           user="mallory@example.com")
    record("403: get one rollout without rights", "GET", item, user="mallory@example.com")
    record("403: a reader patches a rollout", "PATCH", item,
           {"metadata": {"annotations": {"x": "y"}}}, "application/merge-patch+json", user="carol@example.com")
    record("403: a reader reads ConfigMaps outside aicr-system", "GET", "/api/v1/namespaces/default/configmaps",
           user="carol@example.com")
    record("401: an unknown bearer token", "GET", ROLLOUTS, token="not-a-valid-token")

    stale = server.get("operator.aicr.run/v1alpha1", "RuntimeRollout", name)["metadata"]["resourceVersion"]
    server.request("PATCH", item, {"metadata": {"annotations": {"test.aicr.run/bump": "1"}}},
                   content_type="application/merge-patch+json")
    record("409: merge patch with a stale metadata.resourceVersion", "PATCH", item,
           {"metadata": {"resourceVersion": stale},
            "spec": {"approval": {"user": "bob@example.com", "expires": "2026-11-30T12:00:00Z",
                                  "reason": "Maintenance window"}}},
           "application/merge-patch+json", user="bob@example.com")
    record("422: JSON patch whose `test` fails", "PATCH", item,
           [{"op": "test", "path": "/status/phase", "value": "Validating"},
            {"op": "add", "path": "/spec/revocation",
             "value": {"user": "bob@example.com", "time": "2026-11-30T10:00:00Z", "reason": "r"}}],
           "application/json-patch+json", user="bob@example.com")
    record("422: JSON patch `test` on an absent path with a non-null value", "PATCH", item,
           [{"op": "test", "path": "/spec/approval", "value": {"user": "x"}}],
           "application/json-patch+json", user="bob@example.com")
    record("`test` with value null on an absent field, then add it", "PATCH", item,
           [{"op": "test", "path": "/spec/approval", "value": None},
            {"op": "add", "path": "/spec/approval",
             "value": {"user": "bob@example.com", "expires": "2026-11-30T12:00:00Z", "reason": "Window"}}],
           "application/json-patch+json", user="bob@example.com")
    record("`test` with value null on a field that is now set", "PATCH", item,
           [{"op": "test", "path": "/spec/approval", "value": None}],
           "application/json-patch+json", user="bob@example.com")
    record("422: CRD schema validation (approval.reason empty)", "PATCH", item,
           {"spec": {"approval": {"reason": ""}}}, "application/merge-patch+json", user="bob@example.com")
    record("415: strategic-merge patch on a custom resource", "PATCH", item,
           {"metadata": {"annotations": {"x": "y"}}}, "application/strategic-merge-patch+json",
           user="bob@example.com")
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    record("201: SelfSubjectReview as a user (every authenticated user may create one)", "POST",
           "/apis/authentication.k8s.io/v1/selfsubjectreviews", review, user="bob@example.com")
    record("403: SelfSubjectReview as system:anonymous", "POST",
           "/apis/authentication.k8s.io/v1/selfsubjectreviews", review, user=None)
    return rows


def test_status_bodies(real_apiserver, loaded):
    rows = observe(real_apiserver)
    codes = {title: code for title, _, code, _ in rows}
    for title, text, code, raw in rows:
        print("\n### %s\n%s\n-> HTTP %d\n%s" % (title, text, code, raw.decode("utf-8", "replace")))
    observe_raw_rows = rows
    rows = [(title, text, code, json.loads(raw.decode("utf-8"))) for title, text, code, raw in rows]
    assert codes["404: a rollout that does not exist"] == 404
    assert codes["403: list rollouts without rights"] == 403
    assert codes["403: a reader patches a rollout"] == 403
    assert codes["401: an unknown bearer token"] == 401
    assert codes["409: merge patch with a stale metadata.resourceVersion"] == 409
    assert codes["422: JSON patch whose `test` fails"] == 422
    assert codes["422: CRD schema validation (approval.reason empty)"] == 422
    assert codes["415: strategic-merge patch on a custom resource"] == 415
    assert codes["`test` with value null on an absent field, then add it"] == 200
    assert codes["`test` with value null on a field that is now set"] == 422
    assert codes["201: SelfSubjectReview as a user (every authenticated user may create one)"] == 201
    assert codes["403: SelfSubjectReview as system:anonymous"] == 403
    for title, _, code, body in rows:
        if code >= 400 and isinstance(body, dict):
            assert body.get("kind") == "Status" and body.get("code") == code, (title, body)
    out = os.environ.get("AICR_REAL_OBSERVED_OUT")
    if out:
        write_markdown(out, observe_raw_rows, real_apiserver)


def write_markdown(path, rows, server):
    lines = [
        "# Status bodies of a real kube-apiserver",
        "",
        "Observed by `tests/test_real_apiserver.py::test_status_bodies` against kube-apiserver %s "
        "(built from the Go module proxy by `make real-apiserver`) with the CRDs of "
        "`tests/real_apiserver/crds.yaml` and the RBAC of `tests/real_apiserver/rbac.yaml`. Regenerate with "
        "`AICR_REAL_APISERVER_VERSION=%s AICR_REAL_OBSERVED_OUT=tests/real_apiserver_observed.md "
        "AICR_REQUIRE_REAL_APISERVER=1 "
        ".venv/bin/python -m pytest -q -m real tests/test_real_apiserver.py`."
        % (server.version, server.version),
        "",
        "Rollout names are the smoke test's (`rollout-5e5e5e5e5e5e5e5e-N`); users as in "
        "`tests/support/real_apiserver.py`. An error body is shown byte for byte as received (one line of "
        "compact JSON, then a newline); a success shows only what it changed.",
        "",
        "What to take from it:",
        "",
        "- A failed JSON-patch operation (a `test` that fails, also on an absent path) is HTTP 422 "
        "with the generic message and empty `details`: `errors.NewGenericServerResponse(422, ..., "
        "err.Error(), 0, false)` in `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go` drops "
        "json-patch's own text (no causes when `isUnexpectedResponse` is false).",
        "- `{\"op\": \"test\", \"path\": ..., \"value\": null}` on an absent member SUCCEEDS "
        "(json-patch v4 treats absent as null); on a member that is set, it fails with the 422 above. "
        "A `test` with a non-null value on an absent path fails with the same 422.",
        "- RBAC is decided before the resource is looked up: a user without `get` sees 403 for a "
        "rollout that does not exist. Every authenticated user may create a SelfSubjectReview (201); "
        "`system:anonymous` may not (403).",
        "- A strict-decoding refusal of a JSON patch (`fieldValidation=Strict`, a field the schema does not "
        "declare) is also a 422 without `details`, its message echoing the whole patched object: "
        "commands/writes.py tells it from a failed `test` by its text (tests/test_real_writes.py).",
        "- `details.kind` is the plural resource (`runtimerollouts`) in 403/404/409 bodies, but the "
        "Kind (`RuntimeRollout`) in a 422 from schema validation.",
        "",
    ]
    for title, text, code, raw in rows:
        body = raw.decode("utf-8", "replace")
        lines += ["## %s" % title, "", "```", text, "```", "", "HTTP %d" % code, ""]
        if code >= 400:
            lines += ["```json", body.rstrip("\n"), "```", ""]
            if not body.endswith("\n"):
                lines += ["(no newline at the end of the body)", ""]
        else:
            obj = json.loads(body)
            if "spec" in obj:
                lines += ["Succeeded; `spec.approval` is now `%s`." % json.dumps(obj["spec"].get("approval")), ""]
            else:
                lines += ["```json", body.rstrip("\n"), "```", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
