"""describe, reproduce, approve, revoke and acknowledge, end to end, against a REAL kube-apiserver (the ``real`` tier).

dist/kubectl-aicr runs as a process, as in tests/test_describe.py, tests/test_reproduce.py and
tests/test_writes.py, but against a real kube-apiserver + etcd (tests/support/real_apiserver.py) loaded with
tests/fixtures. The real server assigns uid, resourceVersion and creationTimestamp itself
(``load_objects`` drops the fixtures' values), so these tests assert on what it returns.

The plugin talks to kube-apiserver itself, with nothing of the project's in between: SelfSubjectReview is
the server's own, and the operator's admission rules are the server's ValidatingAdmissionPolicies
(tests/real_apiserver/admission-policies.yaml). The requests a command sent are read from the server's audit
log (tests/support/audit_sink.py), which is also where another client's write is landed while a command's
request waits. Every test here runs on each pinned version (``make test-real``).
"""

import copy
import hashlib
import json
import os
import re
import shlex

import pytest

from tests.support import interpositions
from tests import test_decision_pinning as pinning
from tests import test_writes as writes
from tests.support.apiserver import FIXTURE_ANNOTATION, load_fixtures
from tests.support import audit_sink
from tests.support.real_apiserver import HARNESS_AGENT, real_apiserver  # noqa: F401  (session fixture)
from tests.support.plugin import describe
from tests.support.text import check_awaiting_approval, command_lines, field

pytestmark = [pytest.mark.real, pytest.mark.e2e]

# the query of a --dry-run=server PATCH (commands/writes.py WRITE_QUERY after dryRun)
DRY_RUN_QUERY = "dryRun=All&fieldManager=kubectl-aicr&fieldValidation=Strict"

HERE = os.path.dirname(os.path.abspath(__file__))
KUBECTL = os.path.join(os.path.dirname(HERE), ".venv", "bin", "kubectl")
FIXTURES = os.path.join(HERE, "fixtures")
GROUP_VERSION = "operator.aicr.run/v1alpha1"
RR = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
CR = "/apis/operator.aicr.run/v1alpha1/clusterruntimes"
CM = "/api/v1/namespaces/aicr-system/configmaps"
DIGEST_ANNOTATION = "operator.aicr.run/desired-state-digest"


class Cluster:
    """The real server loaded with tests/fixtures: objects by fixture role, kubeconfigs, restore."""

    def __init__(self, server, workdir):
        self.server = server
        self.workdir = workdir
        self.given = {}
        self.reload()

    def reload(self):
        """(Re)load every fixture; returns the stored objects. Times (@now) resolve afresh."""
        objects = load_fixtures(FIXTURES)
        self.given = {o["metadata"]["annotations"][FIXTURE_ANNOTATION]: o for o in objects}
        return self.server.load_objects(objects)

    def restore(self, role):
        self.server.load_objects([self.given[role]])

    def name(self, role):
        return self.given[role]["metadata"]["name"]

    fixture_name = name  # as the test API server names it (tests/support/plugin.py's describe takes either)

    def get(self, role):
        """The object as the real server has it now."""
        obj = self.given[role]
        return self.server.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"],
                               obj["metadata"].get("namespace"))

    def kubeconfig(self, user="alice@example.com", style=None):
        path = os.path.join(self.workdir, "%s-%s" % (user.split("@")[0], style or "default"))
        return self.server.write_kubeconfig(path, user=user, style=style)

    def versions(self):
        """{(kind, namespace, name): resourceVersion} of every object the fixtures touch."""
        found = {}
        for path in (RR, CR, CM, "/api/v1/namespaces/default/configmaps"):
            code, body = self.server.request("GET", path)
            assert code == 200, body
            for item in body["items"]:
                meta = item["metadata"]
                found[(path, meta.get("namespace"), meta["name"])] = meta["resourceVersion"]
        return found


@pytest.fixture(scope="module")
def cluster(real_apiserver, tmp_path_factory):
    return Cluster(real_apiserver, str(tmp_path_factory.mktemp("real-kubeconfigs")))


# --------------------------------------------------------------------------- describe


def test_describe_an_upgrade_awaiting_approval_with_its_verified_report(run, cluster):
    result = describe(run, cluster, role="awaiting-approval", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    obj = cluster.get("awaiting-approval")
    assert obj["metadata"]["uid"] != cluster.given["awaiting-approval"]["metadata"]["uid"]  # the real server's uid
    check_awaiting_approval(result.stdout, obj)


def test_describe_an_initial_install(run, cluster):
    result = describe(run, cluster, role="install", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert field(result.stdout, "Transition") == "none (initial install)"
    assert field(result.stdout, "Approval") == "not required"
    assert "Assessment: none" in result.stdout.splitlines()
    assert re.search(r"^  gpu-operator\s+Install\s+safe\s+yes\s+InFlight: Waiting", result.stdout, re.M)


def test_a_tampered_report_is_never_shown_and_exits_3(run, cluster):
    result = describe(run, cluster, role="tampered-report", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 3
    assert field(result.stdout, "Assessment").startswith("NOT VERIFIED, NOT SHOWN: ")
    assert "COMPONENT" not in result.stdout
    assert field(result.stdout, "Phase") == "AwaitingApproval"
    assert result.stderr.startswith("error: assessment report not verified: ")
    assert len(result.stderr.splitlines()) == 1


def test_a_missing_report_is_not_verified(run, cluster):
    result = describe(run, cluster, role="report-missing", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 1  # unavailable, not a content mismatch (exit 3)
    assert "was not found" in field(result.stdout, "Assessment")


def test_approval_revocation_and_acknowledgements_are_shown(run, cluster):
    approval = cluster.get("approved-rolling-out")["spec"]["approval"]
    out = describe(run, cluster, role="approved-rolling-out", kubeconfig=cluster.kubeconfig()).stdout
    assert field(out, "Approval").startswith("approved by %s until %s (expires in " % (approval["user"],
                                                                                     approval["expires"]))
    assert field(out, "Approval reason") == approval["reason"]
    revoked = cluster.get("revoked")
    out = describe(run, cluster, role="revoked", kubeconfig=cluster.kubeconfig()).stdout
    assert field(out, "Outcome") == "Revoked"
    assert field(out, "Revocation").startswith("revoked by %s at " % revoked["spec"]["revocation"]["user"])
    waiting = cluster.get("awaiting-acknowledgement")
    out = describe(run, cluster, role="awaiting-acknowledgement", kubeconfig=cluster.kubeconfig()).stdout
    for ack in waiting["spec"]["acknowledgements"]:
        assert "Acknowledged: %s by %s at %s" % (ack["release"], ack["user"], ack["time"]) in out


def test_unknown_values_and_fields_from_the_server_are_printed_as_they_are(run, cluster):
    odd = copy.deepcopy(cluster.given["no-assessment"])
    odd["metadata"]["name"] = "rollout-0dd0dd0dd0dd0dd0-1"
    odd["metadata"]["annotations"][FIXTURE_ANNOTATION] = "odd"
    odd["status"]["phase"] = "Hibernating"
    odd["status"]["futureField"] = {"nested": [1, 2]}
    odd["spec"]["steps"][0].update(operation="Migrate", assessment="deferred", futureField=True)
    cluster.server.load_objects([odd])
    result = run("describe", odd["metadata"]["name"], kubeconfig=cluster.kubeconfig("carol@example.com"))
    assert result.returncode == 0, result.stderr
    assert field(result.stdout, "Phase") == "Hibernating"
    release = odd["spec"]["steps"][0]["release"]
    assert re.search(r"^  %s\s+Migrate\s+deferred\s+" % re.escape(release), result.stdout, re.M)


def test_a_reader_may_describe(run, cluster):
    result = describe(run, cluster, role="awaiting-approval", kubeconfig=cluster.kubeconfig("carol@example.com"))
    assert result.returncode == 0, result.stderr


def test_not_found_is_printed_as_kubectl_prints_it(run, cluster):
    result = run("describe", "nope", kubeconfig=cluster.kubeconfig())
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == 'error: runtimerollouts.operator.aicr.run "nope" not found\n'


@pytest.mark.parametrize("name", ["install", "rollout-0000000000000000-9"])
def test_a_stranger_is_forbidden_in_one_line_even_for_a_missing_rollout(run, cluster, name):
    name = cluster.name(name) if name in cluster.given else name
    result = run("describe", name, kubeconfig=cluster.kubeconfig("mallory@example.com"))
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        'error: runtimerollouts.operator.aicr.run "%s" is forbidden: User "mallory@example.com" cannot get '
        'resource "runtimerollouts" in API group "operator.aicr.run" at the cluster scope\n' % name)


@pytest.mark.parametrize("style", ["cert-files", "cert-data", "token"])
def test_every_credential_style_authenticates_as_its_user(run, cluster, style):
    result = describe(run, cluster, role="install", kubeconfig=cluster.kubeconfig("alice@example.com", style))
    assert result.returncode == 0, result.stderr
    # the server names who it saw: the same style for mallory is refused as mallory
    result = describe(run, cluster, role="install", kubeconfig=cluster.kubeconfig("mallory@example.com", style))
    assert result.returncode == 1 and 'User "mallory@example.com" cannot get' in result.stderr


# --------------------------------------------------------------------------- reproduce


def digest_of(cluster, role):
    return cluster.given[role]["metadata"]["annotations"][DIGEST_ANNOTATION]


@pytest.fixture
def restore_runtime(cluster):
    yield
    cluster.restore("cluster")


def test_reproduce_without_an_argument_takes_the_active_plan(run, cluster, tmp_path):
    folder = tmp_path / "out"
    result = run("reproduce", "--dir", folder, kubeconfig=cluster.kubeconfig("carol@example.com"))
    assert result.returncode == 0, result.stderr
    active = cluster.get("plan-active")
    assert (folder / "recipe.json").read_bytes() == active["data"]["recipe.json"].encode("utf-8")
    assert "sha256:" + hashlib.sha256((folder / "recipe.json").read_bytes()).hexdigest() == \
        active["data"]["recipeDigest"]
    assert "the active plan of ClusterRuntime cluster" in result.stdout
    assert digest_of(cluster, "plan-active") in result.stdout and active["metadata"]["name"] in result.stdout
    docker, oras, diff = command_lines(result.stdout)
    flags = json.loads(active["data"]["renderFlags"])
    argv = shlex.split(docker)
    assert argv[:5] == ["docker", "run", "--rm", "--user", "$(id -u):$(id -g)"] and active["data"]["aicrImage"] in argv
    assert argv[-4 - len(flags):-4] == flags  # the plan's flags, then reproduce's own, which win
    made = "aicr-plan-" + digest_of(cluster, "plan-active")[len("sha256:"):][:16]  # this run's own folder
    assert argv[-4:] == ["--recipe", "/work/recipe.json", "--output", "/work/%s/rendered" % made]
    assert shlex.split(oras)[:2] == ["oras", "pull"] and shlex.split(oras)[-1] == active["data"]["bundle"]
    assert shlex.split(diff) == ["diff", "-r", str(folder / made / "rendered"), str(folder / made / "bundle")]


def test_reproduce_takes_the_candidate_when_there_is_no_active_plan(run, cluster, tmp_path, restore_runtime):
    runtime = copy.deepcopy(cluster.given["cluster"])
    del runtime["status"]["activePlan"]
    cluster.server.load_objects([runtime])
    result = run("reproduce", "--dir", tmp_path, kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert "the candidate plan of ClusterRuntime cluster" in result.stdout
    assert digest_of(cluster, "plan-candidate") in result.stdout


def test_reproduce_with_neither_plan_is_an_error(run, cluster, tmp_path, restore_runtime):
    runtime = copy.deepcopy(cluster.given["cluster"])
    runtime["status"] = {}
    cluster.server.load_objects([runtime])
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 1 and "neither an active nor a candidate plan" in result.stderr
    assert not (tmp_path / "x").exists()


def test_a_plan_by_digest_is_found_by_its_annotation(run, cluster, tmp_path):
    result = run("reproduce", digest_of(cluster, "plan-candidate"), "--dir", tmp_path,
                 kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "recipe.json").read_bytes() == cluster.get("plan-candidate")["data"]["recipe.json"].encode()


def test_a_plan_by_name_must_carry_the_matching_annotation(run, cluster, tmp_path):
    good = run("reproduce", cluster.name("plan-active"), "--dir", tmp_path, kubeconfig=cluster.kubeconfig())
    assert good.returncode == 0, good.stderr
    bad = run("reproduce", cluster.name("plan-mislabelled"), "--dir", tmp_path / "m", kubeconfig=cluster.kubeconfig())
    assert bad.returncode == 1 and "does not match its name" in bad.stderr
    assert not (tmp_path / "m").exists()


def test_two_configmaps_claiming_one_digest_are_ambiguous(run, cluster, tmp_path):
    twin = copy.deepcopy(cluster.given["plan-active"])
    twin["metadata"]["name"] = "aicr-plan-0000000000000000"
    twin["metadata"]["annotations"][FIXTURE_ANNOTATION] = "twin"
    cluster.server.load_objects([twin])
    try:
        result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=cluster.kubeconfig())
    finally:
        code, body = cluster.server.request("DELETE", CM + "/aicr-plan-0000000000000000")
        assert code == 200, body
    assert result.returncode == 1 and "refusing to guess" in result.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("role,words,code", [
    ("plan-applications", "rebuilt from Argo CD Applications and has no recipe", 1),
    ("plan-no-flags", "records no render flags", 1),
    ("plan-recipe-mismatch", "does not match|not to its recorded recipeDigest", 3),
])
def test_reproduce_refusals_write_nothing(run, cluster, tmp_path, role, words, code):
    folder = tmp_path / "out"
    result = run("reproduce", digest_of(cluster, role), "--dir", folder, kubeconfig=cluster.kubeconfig())
    assert result.returncode == code, result.stderr
    assert any(w in result.stderr for w in words.split("|"))
    assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
    assert not folder.exists()


def test_an_unknown_digest_is_a_clear_error(run, cluster, tmp_path):
    result = run("reproduce", "sha256:" + "a" * 64, "--dir", tmp_path, kubeconfig=cluster.kubeconfig())
    assert result.returncode == 1
    assert "no plan ConfigMap in aicr-system has desired-state digest" in result.stderr


def test_reproduce_as_a_stranger_is_forbidden_in_one_line(run, cluster, tmp_path):
    result = run("reproduce", "--dir", tmp_path / "x", kubeconfig=cluster.kubeconfig("mallory@example.com"))
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and 'User "mallory@example.com" cannot get' in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not (tmp_path / "x").exists()


def test_describe_and_reproduce_change_nothing_in_the_cluster(run, cluster, tmp_path):
    before = cluster.versions()
    config = cluster.kubeconfig("bob@example.com")
    for args in (["reproduce"], ["reproduce", digest_of(cluster, "plan-candidate")],
                 ["reproduce", cluster.name("plan-active")], ["reproduce", digest_of(cluster, "plan-applications")],
                 ["describe", cluster.name("awaiting-approval")], ["describe", cluster.name("tampered-report")]):
        run(*args, "--dir", tmp_path / "d", kubeconfig=config)
    assert cluster.versions() == before


# --------------------------------------------------------------------------- writes
#
# The plugin talks to kube-apiserver itself: SelfSubjectReview, RBAC, the JSON patches and their `test`
# operations, etcd and the operator's ValidatingAdmissionPolicies (tests/real_apiserver/admission-policies.yaml)
# are all the server's. What the tests read of the requests comes from the server's audit log
# (tests/support/audit_sink.py, RealAPIServer.requests).


WRITE_ROLES = ("awaiting-approval", "approved-rolling-out", "awaiting-acknowledgement", "validating")
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


@pytest.fixture
def audit(cluster):
    """The server's audit log, emptied; the rollouts the write tests touch are put back after."""
    cluster.server.clear_requests()
    yield cluster.server
    cluster.server.clear_requests()
    cluster.server.load_objects([cluster.given[role] for role in WRITE_ROLES])


@pytest.fixture
def as_test_server(cluster, audit):
    return RealServerAsTestServer(cluster)


class RealServerAsTestServer:
    """The parts of tests/support/apiserver/'s APIServer that the write tests of tests/test_writes.py and
    tests/test_decision_pinning.py use, on the real server: objects by fixture role, kubeconfigs for the
    server itself, its audit log as the request log, and ``interpose``, which lands a change with real
    requests (RealAPIServer.apply_action) while the command's request waits at the server's audit stage, and
    logs it as an ``INTERPOSE`` record, as the test server does. So the very same test bodies judge both
    servers."""

    operator_namespace = "aicr-system"

    def __init__(self, cluster):
        self.cluster = cluster
        self.server = cluster.server

    def fixture_name(self, role):
        return self.cluster.name(role)

    def fixture(self, role):
        return self.cluster.get(role)

    def write_kubeconfig(self, path, user="alice@example.com"):
        return self.server.write_kubeconfig(path, user=user)

    def kubeconfig(self, users):
        [user] = users
        return self.server.kubeconfig(user)

    def get_object(self, kind, name):
        assert kind == "RuntimeRollout", kind
        return self.server.get("operator.aicr.run/v1alpha1", kind, name)

    @property
    def requests(self):
        return self.server.requests

    def clear_requests(self):
        self.server.clear_requests()

    def interpose(self, name, actions, when="before-patch"):
        path = RR + "/" + name

        def land(record):
            for action in actions:
                self.server.apply_action(action)
            self.server.audit.log(audit_sink.Record("INTERPOSE", path, when, None, None,
                                                    json.dumps(actions).encode()))

        def the_plugins(record):
            return record.user_agent != HARNESS_AGENT

        if when == "before-patch":
            self.server.audit.interpose(land, "PATCH", path, "before", the_plugins)
        else:
            self.server.audit.interpose(land, "GET", path, "after", the_plugins)


def patches(server):
    return [r for r in server.requests if r.method == "PATCH"]


def self_subject_review(cluster, **who):
    code, body = cluster.server.request("POST", SSR, {"apiVersion": "authentication.k8s.io/v1",
                                                      "kind": "SelfSubjectReview"}, **who)
    assert code == 201, body
    return body["status"]["userInfo"]


@pytest.mark.parametrize("user,style", [("alice@example.com", "cert-files"), ("bob@example.com", "token"),
                                        ("approver-07", "token")])
def test_approve_records_the_username_the_servers_own_self_subject_review_reports(run, cluster, audit, user,
                                                                                 style):
    """SelfSubjectReview is kube-apiserver's own (authentication.k8s.io/v1): for a client certificate the CN,
    for a static token the token file's name; the plugin records exactly that."""
    info = self_subject_review(cluster, user=user) if style == "token" else None
    if style == "cert-files":
        import subprocess
        out = subprocess.run([KUBECTL, "--kubeconfig", cluster.kubeconfig(user, style), "auth", "whoami", "-o",
                              "json"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        info = json.loads(out.stdout)["status"]["userInfo"]
    assert info["username"] == user and "system:authenticated" in info["groups"]
    audit.clear_requests()
    name = cluster.name("awaiting-approval")
    result = run("approve", name, "--reason", "r", kubeconfig=cluster.kubeconfig(user, style))
    assert result.returncode == 0, result.stderr
    assert cluster.get("awaiting-approval")["spec"]["approval"]["user"] == info["username"]
    [review] = [r for r in audit.requests if r.path == SSR]
    assert (review.method, review.status, review.user) == ("POST", 201, user)


def test_an_impersonated_approval_records_the_impersonated_user(run, cluster, audit):
    """``--as bob@example.com`` with admin's certificate: the server's SelfSubjectReview reports the
    impersonated user (bob, with only the groups --as-group names, plus system:authenticated), RBAC judges
    bob, and the approval names bob; the audit log shows admin as the authenticated user behind it."""
    admin = cluster.kubeconfig("admin")
    info = self_subject_review(cluster, user="admin", impersonate="bob@example.com")
    assert info["username"] == "bob@example.com" and info["groups"] == ["system:authenticated"]
    name = cluster.name("awaiting-approval")
    result = run("approve", name, "--reason", "r", "--as", "bob@example.com", kubeconfig=admin)
    assert result.returncode == 0, result.stderr
    assert cluster.get("awaiting-approval")["spec"]["approval"]["user"] == "bob@example.com"
    assert result.stdout.splitlines()[0].startswith("rollout %s approved by bob@example.com until " % name)
    [patch] = patches(audit)
    assert (patch.user, patch.authenticated, patch.status) == ("bob@example.com", "admin", 200)
    # impersonating a user who may not patch: the server's RBAC refuses, as that user
    cluster.restore("awaiting-approval")
    result = run("approve", name, "--reason", "r", "--as", "carol@example.com", kubeconfig=admin)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].endswith(
        'User "carol@example.com" cannot patch resource "runtimerollouts" in API group "operator.aicr.run" at '
        "the cluster scope"), result.stderr


def test_kubectl_auth_whoami_reports_the_user_the_plugin_records(run, cluster, audit):
    for user, style, extra in (("alice@example.com", "cert-files", []), ("carol@example.com", "token", []),
                               ("admin", "cert-files", ["--as", "bob@example.com"])):
        import subprocess
        out = subprocess.run([KUBECTL, "--kubeconfig", cluster.kubeconfig(user, style), "auth", "whoami"] + extra,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        expected = "bob@example.com" if extra else user
        assert re.search(r"^Username\s+%s$" % re.escape(expected), out.stdout, re.M), out.stdout
    name = cluster.name("approved-rolling-out")
    result = run("revoke", name, "--reason", "r", "--as", "bob@example.com", kubeconfig=cluster.kubeconfig("admin"))
    assert result.returncode == 0, result.stderr
    assert cluster.get("approved-rolling-out")["spec"]["revocation"]["user"] == "bob@example.com"


def test_approve_revoke_and_acknowledge_record_the_server_reported_user(run, cluster, audit):
    name = cluster.name("awaiting-approval")
    result = run("approve", name, "--expires", "1h30m", "--reason", "Maintenance window",
                 kubeconfig=cluster.kubeconfig("bob@example.com"))
    assert result.returncode == 0, result.stderr
    approval = cluster.get("awaiting-approval")["spec"]["approval"]
    assert approval["user"] == "bob@example.com" and approval["reason"] == "Maintenance window"
    assert result.stdout.splitlines()[0] == "rollout %s approved by bob@example.com until %s" % (
        name, approval["expires"])
    [patch] = patches(audit)
    assert (patch.status, patch.user) == (200, "bob@example.com")
    assert json.loads(patch.body)[0] == {"op": "test", "path": "/metadata/uid",
                                         "value": cluster.get("awaiting-approval")["metadata"]["uid"]}

    name = cluster.name("approved-rolling-out")
    result = run("revoke", name, "--reason", "Training job not checkpointed", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    revocation = cluster.get("approved-rolling-out")["spec"]["revocation"]
    assert revocation["user"] == "alice@example.com"  # the client certificate's CN, as the real server read it
    assert result.stdout.startswith("rollout %s revoked by alice@example.com at %s" % (name, revocation["time"]))

    name = cluster.name("awaiting-acknowledgement")
    before = cluster.get("awaiting-acknowledgement")
    awaited = before["status"]["awaitingAcknowledgement"]["release"]
    result = run("acknowledge", name, kubeconfig=cluster.kubeconfig("approver-03"))
    assert result.returncode == 0, result.stderr
    after = cluster.get("awaiting-acknowledgement")["spec"]["acknowledgements"]
    assert after[:-1] == before["spec"].get("acknowledgements", [])
    assert (after[-1]["release"], after[-1]["user"]) == (awaited, "approver-03")
    described = run("describe", name, kubeconfig=cluster.kubeconfig("carol@example.com")).stdout
    assert "Acknowledged: %s by approver-03 at %s" % (awaited, after[-1]["time"]) in described
    # every write was the server's to judge (its policies allowed each), as the user it authenticated
    assert [(p.path.rsplit("/", 1)[1], p.user, p.status) for p in patches(audit)] == [
        (cluster.name("awaiting-approval"), "bob@example.com", 200),
        (cluster.name("approved-rolling-out"), "alice@example.com", 200),
        (name, "approver-03", 200)]


def test_the_servers_admission_refusal_is_shown_as_it_came(run, cluster, audit):
    """The plugin's own checks pass (approved, not ended); the operator's rule 2 refuses a revocation while
    Validating: the ValidatingAdmissionPolicy's denial, as the server words it, is printed as it came."""
    name = cluster.name("validating")
    before = cluster.get("validating")
    result = run("revoke", name, "--reason", "r", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 1 and result.stdout == ""
    # what the decision rests on is shown first (stderr), then the denial, as it came
    assert "  Phase:        Validating" in result.stderr.splitlines()
    assert result.stderr.splitlines()[-1] == (
        'error: runtimerollouts.operator.aicr.run "%s" is forbidden: ValidatingAdmissionPolicy '
        "'aicr-rollout-revocation' with binding 'aicr-rollout-revocation-binding' denied request: "
        "spec.revocation cannot be set while status.phase is Validating" % name)
    assert [(p.user, p.status) for p in patches(audit)] == [("alice@example.com", 422)]
    assert cluster.get("validating")["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_a_reader_is_refused_by_the_real_servers_rbac(run, cluster, audit):
    name = cluster.name("awaiting-approval")
    before = cluster.get("awaiting-approval")
    result = run("approve", name, "--reason", "r", kubeconfig=cluster.kubeconfig("carol@example.com"))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        'error: runtimerollouts.operator.aicr.run "%s" is forbidden: User "carol@example.com" cannot patch resource '
        '"runtimerollouts" in API group "operator.aicr.run" at the cluster scope' % name)
    assert cluster.get("awaiting-approval") == before


@pytest.mark.parametrize("command,role,words", [
    (["approve", "--reason", "r"], "approved-rolling-out", "is already approved by "),
    (["approve", "--reason", "r"], "succeeded", "has ended (outcome Succeeded)"),
    (["revoke", "--reason", "r"], "awaiting-approval", "is not approved; there is nothing to revoke"),
    (["revoke", "--reason", "r"], "revoked", "is already revoked by "),
    (["acknowledge"], "approved-rolling-out", "is not waiting for an acknowledgement"),
])
def test_refusals_send_no_patch(run, cluster, audit, command, role, words):
    before = cluster.get(role)
    result = run(command[0], cluster.name(role), *command[1:], kubeconfig=cluster.kubeconfig("bob@example.com"))
    assert result.returncode == 1 and words in result.stderr, result.stderr
    assert patches(audit) == []
    assert cluster.get(role)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


# The test server's own write tests (tests/test_writes.py), run as they are on the real server.


def test_the_username_comes_from_the_server_not_the_kubeconfig(run, as_test_server, tmp_path):
    writes.test_username_comes_from_the_server_not_the_kubeconfig(run, as_test_server, None, tmp_path)


def test_twenty_approvers_at_once_store_exactly_one_approval_in_etcd(plugin, as_test_server, tmp_path):
    writes.test_twenty_approvers_at_once_exactly_one_approval(plugin, as_test_server, tmp_path)


def test_approve_racing_revoke_never_loses_a_decision(plugin, as_test_server, tmp_path):
    writes.test_approve_racing_revoke_never_loses_a_decision(plugin, as_test_server, tmp_path)


def test_two_acknowledgements_racing_record_one(plugin, as_test_server, tmp_path):
    writes.test_two_acknowledgements_racing_record_one(plugin, as_test_server, tmp_path)


def test_the_requests_a_command_sends(run, cluster, audit):
    """The server's audit log: describe reads twice; approve learns who it is, reads, and writes once, a JSON
    patch pinned by `test`s of the facts it read, the rollout's uid first. (Which connection each came on is
    not in an audit event; tests/test_writes.py checks that on the test server.)"""
    result = run("describe", cluster.name("awaiting-approval"), kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert [r.method for r in audit.requests] == ["GET", "GET"]
    audit.clear_requests()
    name = cluster.name("awaiting-approval")
    uid = cluster.get("awaiting-approval")["metadata"]["uid"]
    result = run("approve", name, "--reason", "r", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    sent = audit.requests
    assert [r.path for r in sent if r.method == "POST"] == [SSR]
    assert {r.method for r in sent} == {"GET", "POST", "PATCH"} and sent[-1].method == "PATCH"
    assert all(r.user == "alice@example.com" for r in sent)
    [patch] = patches(audit)
    assert json.loads(patch.body)[0] == {"op": "test", "path": "/metadata/uid", "value": uid}


# --------------------------------------------------------------------------- another client's write in between
#
# The matrix of tests/test_decision_pinning.py on the real server: the change of tests/support/interpositions.py is
# made with real requests (RealAPIServer.apply_action: a JSON patch by the other approver, the operator's
# status patch, a delete and create) while the command's request waits at the server's audit stage: when its
# PATCH has reached the server and before it is handled ("before-patch"), or when approve's first read has been
# handled and before its answer is complete ("after-read").


def _applies(command, change):
    given = {o["metadata"]["annotations"][FIXTURE_ANNOTATION]: o for o in load_fixtures(FIXTURES)}
    return interpositions.CHANGES[change].make(copy.deepcopy(given[interpositions.TARGETS[command]]),
                                               "aicr-system") is not None


REAL_MATRIX = [case for case in pinning.MATRIX if _applies(case[0], case[1])]


@pytest.mark.parametrize("command,change,when", REAL_MATRIX)
def test_a_change_between_read_and_write(run, cluster, audit, command, change, when):
    """tests/test_decision_pinning.py::test_a_change_between_read_and_write, run as it is on the real server."""
    first = cluster.get(interpositions.TARGETS[command])
    touched = [a["name"] for a in interpositions.CHANGES[change].make(copy.deepcopy(first), "aicr-system")
               if a["kind"] == "ConfigMap"]
    try:
        pinning.test_a_change_between_read_and_write(run, RealServerAsTestServer(cluster), cluster.kubeconfig,
                                                     command, change, when)
    finally:
        for name in touched:  # an immutable report ConfigMap cannot be put back in place
            cluster.server.request("DELETE", CM + "/" + name)
        cluster.reload()


# --------------------------------------------------------------------------- --dry-run


@pytest.mark.parametrize("command", interpositions.COMMANDS)
@pytest.mark.parametrize("mode", ["server", "client"])
def test_dry_run_stores_nothing_on_the_real_server(run, cluster, audit, command, mode):
    role = interpositions.TARGETS[command]
    before = cluster.get(role)
    name = before["metadata"]["name"]
    result = run(command, name, *pinning.ARGS[command], "--dry-run=" + mode, kubeconfig=cluster.kubeconfig())
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].endswith(" (server dry run)" if mode == "server" else " (dry run)")
    assert cluster.get(role) == before  # same resourceVersion: nothing reached etcd
    sent = patches(audit)
    if mode == "client":
        assert sent == []
        return
    # the server ran its admission (the policies allowed it: 200) and stored nothing
    assert [(p.query, p.status, p.user) for p in sent] == [(DRY_RUN_QUERY, 200, "alice@example.com")]


def test_server_dry_run_still_meets_the_operators_rules(run, cluster, audit):
    name = cluster.name("validating")
    before = cluster.get("validating")
    result = run("revoke", name, "--reason", "r", "--dry-run=server", kubeconfig=cluster.kubeconfig())
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines()[-1] == (
        'error: runtimerollouts.operator.aicr.run "%s" is forbidden: ValidatingAdmissionPolicy '
        "'aicr-rollout-revocation' with binding 'aicr-rollout-revocation-binding' denied request: "
        "spec.revocation cannot be set while status.phase is Validating" % name)
    assert [(p.query, p.status) for p in patches(audit)] == [(DRY_RUN_QUERY, 422)]
    assert cluster.get("validating") == before


# --------------------------------------------------------------------------- kubectl beside the plugin


def test_kubectl_get_and_get_raw_read_what_describe_and_list_show(run, cluster, tmp_path):
    """`kubectl get runtimerollouts` (the CRD's printer columns) and `kubectl get --raw` (the stored object) on
    the same server: the phase, UID and names the plugin's describe and list print are the server's."""
    import subprocess
    from tests.support.text import list_table
    config = cluster.kubeconfig("carol@example.com")

    def kubectl(*args):
        out = subprocess.run([KUBECTL, "--kubeconfig", config, "--cache-dir", str(tmp_path / "cache")] + list(args),
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    name = cluster.name("awaiting-approval")
    described = run("describe", name, kubeconfig=config)
    assert described.returncode == 0, described.stderr
    raw = json.loads(kubectl("get", "--raw", RR + "/" + name))
    assert field(described.stdout, "UID") == raw["metadata"]["uid"]
    assert field(described.stdout, "Phase") == raw["status"]["phase"]
    header, row = kubectl("get", "runtimerollouts", name).splitlines()
    assert header.split()[:3] == ["NAME", "PHASE", "OUTCOME"] and row.split()[:2] == [name, raw["status"]["phase"]]
    listed = run("list", kubeconfig=config)
    assert listed.returncode == 0, listed.stderr
    rows, names = list_table(listed.stdout)
    known = {line.split("/", 1)[1] for line in kubectl("get", "aicrro", "-o", "name").split()}
    assert names and set(names) <= known
    phases = {i["metadata"]["name"]: (i.get("status") or {}).get("phase")
              for i in json.loads(kubectl("get", "--raw", RR))["items"]}
    assert all(rows[n]["PHASE"] == phases[n] for n in names), (rows, phases)
