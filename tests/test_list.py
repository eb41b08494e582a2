"""list, end to end: dist/kubectl-aicr as a process against the HTTPS test API server, rollouts in every phase."""

import copy
import datetime
import json
import os
import subprocess
import urllib.parse

import pytest

from kubectl_aicr.aicr import objects
from kubectl_aicr.commands.list import human_duration, list_rollouts
from kubectl_aicr.errors import AicrError
from kubectl_aicr.kube import rest
from tests.support.plugin import VENV_BIN, base_env
from tests.support.text import HOSTILE, clean, list_table

pytestmark = pytest.mark.e2e

ROLLOUTS = "/apis/operator.aicr.run/v1alpha1/runtimerollouts"
ENDED = ("revoked", "succeeded", "expired", "failed")
# needing a person, soonest deadline first: deadline-passed (-1h), awaiting-acknowledgement (+2h),
# awaiting-approval (+4h), tampered-report (+5h), then no-assessment and report-missing (+8h) by name
NEEDS_PERSON = ("deadline-passed", "awaiting-acknowledgement", "awaiting-approval", "tampered-report")
OTHERS = ("install", "approved-rolling-out", "validating")


def add_rollout(api_server, role, name, **changes):
    """A copy of fixture ``role`` named ``name``, with status/spec fields changed (``status_phase=...``)."""
    obj = copy.deepcopy(api_server.fixture(role))
    obj["metadata"] = {"name": name, "labels": dict(obj["metadata"].get("labels") or {})}
    for key, value in changes.items():
        part, _, field = key.partition("_")
        if value is None:
            obj[part].pop(field, None)
        else:
            obj[part][field] = value
    return api_server.put_object(obj)


def test_rollouts_not_ended_people_first_as_a_viewer(run, api_server, kubeconfig_for):
    add_rollout(api_server, "install", "rollout-pending-1", status_phase="Pending")
    add_rollout(api_server, "approved-rolling-out", "rollout-approval-ran-out-1",
                spec_approval={"user": "alice@example.com", "expires": "2020-01-01T00:00:00Z", "reason": "r"})
    add_rollout(api_server, "install", "rollout-completed-no-outcome-1", status_phase="Completed")
    result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    rows, order = list_table(result.stdout)
    name = api_server.fixture_name
    assert order[:4] == [name(role) for role in NEEDS_PERSON]
    assert set(order[4:6]) == {name("no-assessment"), name("report-missing")}
    assert sorted(order[6:]) == sorted([name(r) for r in OTHERS] + ["rollout-pending-1", "rollout-approval-ran-out-1"])
    for role in ENDED:
        assert name(role) not in rows
    assert "rollout-completed-no-outcome-1" not in rows  # phase Completed counts as ended

    phases = {rows[name(r)]["PHASE"] for r in NEEDS_PERSON + OTHERS} | {rows["rollout-pending-1"]["PHASE"]}
    assert phases == {"Pending", "AwaitingApproval", "RollingOut", "AwaitingAcknowledgement", "Validating"}
    approval = {key: rows[name(key)]["APPROVAL"] for key in NEEDS_PERSON + OTHERS}
    assert approval["awaiting-approval"] == approval["deadline-passed"] == "pending"
    assert approval["install"] == "not required"
    until = api_server.fixture("approved-rolling-out")["spec"]["approval"]["expires"]
    assert approval["approved-rolling-out"] == "approved by alice@example.com until %s" % until
    assert approval["validating"].startswith("approved by bob@example.com until ")
    assert rows["rollout-approval-ran-out-1"]["APPROVAL"] == "expired"
    assert rows[name("awaiting-acknowledgement")]["WAITING ON"] == "nvsentinel"
    assert rows[name("awaiting-approval")]["WAITING ON"] == "<none>"
    # relative to now (the session's server may have started minutes ago): a few seconds' lag allowed
    now = datetime.datetime.now(datetime.timezone.utc)
    for role in NEEDS_PERSON + OTHERS:
        obj = api_server.fixture(role)
        created = objects.parse_time(obj["metadata"]["creationTimestamp"])
        assert rows[name(role)]["AGE"] in {human_duration((now - created).total_seconds() - lag) for lag in (0, 5)}
        left = (objects.parse_time(obj["spec"]["deadline"]) - now).total_seconds()
        deadlines = {"in %s" % human_duration(left + lag) if left + lag > 0 else "%s ago" % human_duration(-left - lag)
                     for lag in (0, 5)}
        assert rows[name(role)]["DEADLINE"] in deadlines
    assert rows[name("awaiting-approval")]["DEADLINE"].startswith("in ")
    assert rows[name("deadline-passed")]["DEADLINE"].endswith(" ago")

    # a viewer's read: GETs of the rollout collection only, nothing written
    methods = {(r.method, r.path) for r in api_server.requests}
    assert methods == {("GET", ROLLOUTS)}


def test_all_adds_the_ended_rollouts_last(run, api_server, kubeconfig_for):
    result = run("list", "--all", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    rows, order = list_table(result.stdout)
    ended = {api_server.fixture_name(role) for role in ENDED}
    assert set(order[-len(ended):]) == ended
    assert rows[api_server.fixture_name("revoked")]["APPROVAL"] == "revoked by bob@example.com"
    assert rows[api_server.fixture_name("failed")]["APPROVAL"] == "not required"
    assert rows[api_server.fixture_name("expired")]["APPROVAL"] == "expired"
    assert rows[api_server.fixture_name("failed")]["PHASE"] == "Completed (Failed)"
    assert rows[api_server.fixture_name("failed")]["DEADLINE"] == "24h ago"


def test_pages_follow_continue_tokens(run, api_server, kubeconfig_for):
    names = api_server.add_rollouts(600)
    result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    rows, _ = list_table(result.stdout)
    assert set(names) <= set(rows) and len(names) == 600
    pages = [urllib.parse.parse_qs(r.query) for r in api_server.requests if r.path == ROLLOUTS]
    total = 600 + 13
    assert len(pages) == -(-total // 250)
    assert all(page["limit"] == ["250"] for page in pages)
    assert "continue" not in pages[0] and all(page["continue"] for page in pages[1:])


KUBECTL = os.path.join(VENV_BIN, "kubectl")


def test_a_page_over_the_response_bound_is_read_again_in_smaller_pages(run, api_server, kubeconfig_for):
    """260 rollouts of 70 KB: a page of 250 (17.5 MB) is over the 16 MiB bound on one answer. kubectl reads
    that very answer (it has no bound); the plugin keeps its bound and asks again with half the limit, then
    reads the rest of the list in pages of 125."""
    names = api_server.add_rollouts(260, size=70 * 1024)
    kubeconfig = kubeconfig_for("carol@example.com")
    theirs = subprocess.run([KUBECTL, "get", "--raw", ROLLOUTS + "?limit=250"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(base_env(run.home), KUBECONFIG=str(kubeconfig)),
                            timeout=60)
    assert theirs.returncode == 0 and len(theirs.stdout) > 17 * 1000 * 1000, theirs.stderr
    assert len(json.loads(theirs.stdout)["items"]) == 250
    api_server.clear_requests()
    result = run("list", kubeconfig=kubeconfig)
    assert result.returncode == 0, result.stderr
    rows, _ = list_table(result.stdout)
    assert set(names) <= set(rows)
    pages = [urllib.parse.parse_qs(r.query) for r in api_server.requests if r.path == ROLLOUTS]
    assert [page["limit"] for page in pages] == [["250"], ["125"], ["125"], ["125"]]
    assert "continue" not in pages[0] and "continue" not in pages[1] and all(p["continue"] for p in pages[2:])


class _Pages:
    """A client whose list answers are refused for size when they would hold the rollout ``huge``."""

    def __init__(self, names, huge):
        self.names, self.huge, self.limits = names, huge, []

    def get(self, path, query):
        limit = int(query["limit"])
        self.limits.append(limit)
        start = int(query.get("continue", "0"))
        page = self.names[start:start + limit]
        if self.huge in page:
            raise rest.ResponseTooLarge("server x sent a response over the limit")
        more = start + limit < len(self.names)
        return {"kind": "RuntimeRolloutList", "metadata": {"continue": str(start + limit) if more else ""},
                "items": [{"metadata": {"name": name}} for name in page]}


@pytest.mark.parametrize("huge,after,limits", [
    (0, "the first in name order", [250, 125, 62, 31, 15, 7, 3, 1]),
    (9, "the one after r-08 in name order", [250, 125, 62, 31, 15, 7, 7, 3, 1, 1, 1])])
def test_one_rollout_over_the_response_bound_is_one_error_naming_the_one_before(huge, after, limits):
    names = ["r-%02d" % i for i in range(20)]
    client = _Pages(names, names[huge])
    with pytest.raises(AicrError) as info:
        list_rollouts(client)
    assert str(info.value) == ("one RuntimeRollout (%s) is larger than the plugin's bound on one API answer "
                               "(16777216 bytes); kubectl has no such bound: read it with kubectl get "
                               "runtimerollouts" % after)
    assert client.limits == limits  # halved down to 1 on the page that holds it, never asked again


def test_rollouts_after_a_refused_page_are_read_in_the_smaller_pages():
    names = ["r-%03d" % i for i in range(300)]
    client = _Pages(names, None)
    served = client.get

    def get(path, query):
        if int(query["limit"]) == 250:
            served(path, query)
            raise rest.ResponseTooLarge("server x sent a response over the limit")
        return served(path, query)
    client.get = get
    assert [r.name for r in list_rollouts(client)] == names
    assert client.limits == [250, 125, 125, 125]


def test_endless_pages_end_with_one_error_line_in_bounded_memory(run, api_server, kubeconfig_for):
    """A server that answers every page with nothing but a new continue token: list stops after the pages
    MAX_ROLLOUTS could fill, keeping no token (only its hash)."""
    api_server.set_fault("endless-pages")
    result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
    api_server.set_fault(None)
    pages = objects.MAX_ITEMS // 250 + 2
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == ("error: the API server sent more than %d pages of RuntimeRollouts, more than %d "
                             "rollouts fill\n" % (pages, objects.MAX_ITEMS))
    assert len([r for r in api_server.requests if r.path == ROLLOUTS]) == pages


def test_a_user_without_list_gets_one_error_line(run, api_server, kubeconfig_for):
    result = run("list", kubeconfig=kubeconfig_for("mallory@example.com"))
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "forbidden" in lines[0], result.stderr


def test_nothing_in_progress_says_so(run, api_server, kubeconfig_for):
    for role in NEEDS_PERSON + OTHERS + ("no-assessment", "report-missing"):
        api_server.delete_object("RuntimeRollout", api_server.fixture_name(role))
    result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0 and result.stdout.startswith("No rollouts in progress")


def test_hostile_text_is_escaped(run, api_server, kubeconfig_for):
    add_rollout(api_server, "awaiting-acknowledgement", "rollout-hostile-1", status_phase="Odd" + HOSTILE,
                status_awaitingAcknowledgement={"release": "nv" + HOSTILE},
                spec_approval={"user": "eve" + HOSTILE, "expires": "2999-01-01T00:00:00Z", "reason": "r"})
    result = run("list", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0, result.stderr
    assert clean(result.stdout)
    line = next(l for l in result.stdout.splitlines() if l.startswith("rollout-hostile-1"))
    assert "Oddx\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\x08\\x9b31m\\u202eevil\\u2066\\x0a\\x00end" in line
    assert "approved by evex\\x1b[2J" in line and "nvx\\x1b[2J" in line


def test_unused_flags_are_accepted_and_warned_about(run, api_server, kubeconfig_for):
    result = run("list", "--reason", "x", kubeconfig=kubeconfig_for("carol@example.com"))
    assert result.returncode == 0
    assert "kubectl aicr list does not use --reason; it was ignored" in result.stderr


@pytest.mark.parametrize("seconds,text", [(0, "0s"), (119, "119s"), (120, "2m"), (190, "3m10s"), (600, "10m"),
                                          (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 59 * 60, "3h59m"),
                                          (8 * 3600, "8h"), (47 * 3600, "47h"), (48 * 3600, "2d"),
                                          (76 * 3600, "3d4h"), (8 * 86400, "8d"), (730 * 86400, "2y"),
                                          (760 * 86400, "2y30d"), (8 * 365 * 86400, "8y")])
def test_durations_read_like_kubectl_age(seconds, text):
    """k8s.io/apimachinery util/duration.HumanDuration's table."""
    assert human_duration(seconds) == text


def test_deadline_and_age_from_a_fixed_now():
    from kubectl_aicr.commands import list as list_command
    now = datetime.datetime(2026, 11, 30, 12, 0, tzinfo=datetime.timezone.utc)
    obj = {"metadata": {"name": "r", "creationTimestamp": "2026-11-28T08:00:00Z"},
           "spec": {"deadline": "2026-11-30T15:59:00Z", "approvalRequired": True},
           "status": {"phase": "AwaitingApproval"}}
    lines = list_command.render([objects.rollout(obj)], now)
    assert lines[1].split() == ["r", "AwaitingApproval", "pending", "<none>", "in", "3h59m", "2d4h"]
