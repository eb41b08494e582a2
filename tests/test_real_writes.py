"""What a current kube-apiserver adds to a write (the ``real`` tier, each pinned version): the server's warnings
reach the terminal as kubectl shows them, every PATCH names its field manager, and ``fieldValidation=Strict``
refuses a field the CRD does not declare instead of dropping it.

Each test changes the session's server for its own duration (a Warn policy, a deprecated CRD version, a CRD
without one field) and puts it back, waiting both times until the server acts on the change.
"""

import copy
import os
import time

import pytest

from tests.support.apiserver import FIXTURE_ANNOTATION, load_fixtures
from tests.support.real_apiserver import CRDS_FILE, read_yaml_documents, real_apiserver  # noqa: F401

pytestmark = [pytest.mark.real, pytest.mark.e2e]

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
RR = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/runtimerollouts.operator.aicr.run"
JSON_PATCH = "application/json-patch+json"
WARN_POLICY = "aicr-test-warn-short-reason"


@pytest.fixture(scope="module")
def given(real_apiserver):
    objects = load_fixtures(FIXTURES)
    real_apiserver.load_objects(objects)
    return {o["metadata"]["annotations"][FIXTURE_ANNOTATION]: o for o in objects}


@pytest.fixture
def rollout(real_apiserver, given):
    """The awaiting-approval rollout, put back as it was after the test: its name."""
    real_apiserver.load_objects([given["awaiting-approval"]])
    yield given["awaiting-approval"]["metadata"]["name"]
    real_apiserver.load_objects([given["awaiting-approval"]])


def kubeconfig(server, tmp_path, user="bob@example.com"):
    return server.write_kubeconfig(str(tmp_path / user.split("@")[0]), user=user)


def stored(server, name):
    return server.request("GET", RR + "/" + name)[1]


def wait_for(what, check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.2)


def warnings_of_a_dry_run(server, name, reason):
    """The Warning headers the server attaches to a dry-run approval with ``reason`` (as bob)."""
    headers = []
    server.request("PATCH", RR + "/" + name + "?dryRun=All", [{"op": "add", "path": "/spec/approval", "value": {
        "user": "bob@example.com", "expires": "2030-01-01T00:00:00Z", "reason": reason}}], user="bob@example.com",
        content_type=JSON_PATCH, headers_out=headers)
    return [v for k, v in headers if k.lower() == "warning"]


def put_crd(server, change):
    """Replace the RuntimeRollout CRD with ``change(crd)`` applied to the one of crds.yaml."""
    [crd] = [d for d in read_yaml_documents(CRDS_FILE) if d["spec"]["names"]["kind"] == "RuntimeRollout"]
    crd = copy.deepcopy(crd)
    change(crd)
    current = server.request("GET", CRD)[1]
    crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    code, body = server.request("PUT", CRD, crd)
    assert code == 200, body


def test_every_write_names_its_field_manager(run, real_apiserver, rollout, tmp_path):
    result = run("approve", rollout, "--reason", "r", kubeconfig=kubeconfig(real_apiserver, tmp_path))
    assert result.returncode == 0, result.stderr
    managers = {(m["manager"], m["operation"]) for m in stored(real_apiserver, rollout)["metadata"]["managedFields"]}
    assert ("kubectl-aicr", "Update") in managers, managers
    [patch] = [r for r in real_apiserver.requests if r.method == "PATCH"]
    assert "fieldManager=kubectl-aicr" in patch.query.split("&") and "fieldValidation=Strict" in patch.query.split("&")


@pytest.fixture
def warn_policy(real_apiserver):
    """A ValidatingAdmissionPolicy with the Warn action: an approval reason shorter than 3 characters."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": WARN_POLICY},
              "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [{
                  "apiGroups": ["operator.aicr.run"], "apiVersions": ["*"], "operations": ["UPDATE"],
                  "resources": ["runtimerollouts"]}]},
                  "validations": [{"expression": "!has(object.spec.approval) || size(object.spec.approval.reason) >= 3",
                                   "message": "a reason this short explains little (say why)"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": WARN_POLICY + "-binding"},
               "spec": {"policyName": WARN_POLICY, "validationActions": ["Warn"]}}
    real_apiserver.load_objects([policy, binding])
    yield
    for kind, name in (("validatingadmissionpolicybindings", WARN_POLICY + "-binding"),
                       ("validatingadmissionpolicies", WARN_POLICY)):
        real_apiserver.request("DELETE", "/apis/admissionregistration.k8s.io/v1/%s/%s" % (kind, name))


def test_a_warn_policys_warning_reaches_the_terminal_once(run, real_apiserver, rollout, warn_policy,
                                                                      tmp_path):
    wait_for("the Warn policy", lambda: warnings_of_a_dry_run(real_apiserver, rollout, "r"))
    result = run("approve", rollout, "--reason", "r", kubeconfig=kubeconfig(real_apiserver, tmp_path))
    assert result.returncode == 0, result.stderr
    line = ("Warning: Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s-binding': a reason "
            "this short explains little (say why)" % (WARN_POLICY, WARN_POLICY))
    assert result.stderr.splitlines().count(line) == 1, result.stderr
    assert stored(real_apiserver, rollout)["spec"]["approval"]["reason"] == "r"  # Warn does not refuse


def test_a_deprecated_crd_versions_warning_is_shown_on_every_command_once(run, real_apiserver, given, rollout,
                                                                          tmp_path):
    text = "operator.aicr.run/v1alpha1 RuntimeRollout is deprecated; use the operator's newer release"

    def deprecated(crd):
        crd["spec"]["versions"][0].update(deprecated=True, deprecationWarning=text)

    put_crd(real_apiserver, deprecated)
    try:
        wait_for("the deprecation warning", lambda: warnings_of_a_dry_run(real_apiserver, rollout, "long enough"))
        config = kubeconfig(real_apiserver, tmp_path)
        for args in (["describe", rollout], ["approve", rollout, "--reason", "Maintenance window"]):
            result = run(*args, kubeconfig=config)
            assert result.returncode == 0, result.stderr
            assert result.stderr.splitlines().count("Warning: " + text) == 1, result.stderr
    finally:
        put_crd(real_apiserver, lambda crd: None)
        wait_for("the deprecation to end", lambda: not warnings_of_a_dry_run(real_apiserver, rollout, "long enough"))


def test_a_field_the_crd_does_not_declare_is_refused_and_nothing_is_stored(run, real_apiserver, rollout, tmp_path):
    """A CRD of another release, whose approval has no ``expires`` (and keeps no unknown fields): with
    fieldValidation=Strict the server refuses the approval instead of storing it without its expiry."""

    def without_expires(crd):
        approval = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
            "approval"]
        approval.pop("x-kubernetes-preserve-unknown-fields")
        del approval["properties"]["expires"]

    def strict_refuses():
        add = [{"op": "add", "path": "/spec/approval",
                "value": {"user": "bob@example.com", "expires": "x", "reason": "r"}}]
        code, body = real_apiserver.request("PATCH", RR + "/" + rollout + "?dryRun=All&fieldValidation=Strict", add,
                                            user="bob@example.com", content_type=JSON_PATCH)
        return code == 422 and "strict decoding error" in body["message"]

    put_crd(real_apiserver, without_expires)
    try:
        wait_for("the CRD without expires", strict_refuses)
        before = stored(real_apiserver, rollout)
        real_apiserver.clear_requests()
        result = run("approve", rollout, "--reason", "r", kubeconfig=kubeconfig(real_apiserver, tmp_path))
        assert result.returncode == 1 and result.stdout == ""
        last = result.stderr.splitlines()[-1]
        assert last == ('error: the server refused the write: strict decoding error: unknown field '
                        '"spec.approval.expires"; nothing was written: the cluster\'s RuntimeRollout schema does not '
                        "declare a field this kubectl-aicr writes; use the kubectl-aicr of the operator's release"), last
        after = stored(real_apiserver, rollout)
        assert "approval" not in after["spec"]
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        assert [r.status for r in real_apiserver.requests if r.method == "PATCH"] == [422]  # once: never retried
    finally:
        put_crd(real_apiserver, lambda crd: None)
        wait_for("the CRD with expires again", lambda: not strict_refuses())
