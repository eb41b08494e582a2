"""A decision binds to what describe showed, and a write whose answer was lost is recognised (issue 11).

- --expect-uid and --expect-assessment (with --expect-digest) refuse, sending no PATCH, a rollout that was
  deleted and created again under the same name, target plan and a report that verifies; describe prints
  the flags that bind a decision to what it showed.
- The test server stores the PATCH and loses its answer (closed, reset, held past the deadline, or a 409):
  the command reads the rollout again, recognises its own entry and succeeds, or says the write may have
  been recorded.
- reproduce takes a bare 16-hex digest prefix (one parser with --expect-digest); --expires is bounded as
  Go's time.ParseDuration bounds it, to the nanosecond.
"""

import copy
import hashlib
import json
import shlex
import uuid

import pytest

from kubectl_aicr import cli
from kubectl_aicr.errors import UsageError

ALICE = "alice@example.com"


def _patches(api_server):
    return [r for r in api_server.requests if r.method == "PATCH"]


def _recreate_with_another_report(api_server, name):
    """Delete rollout ``name`` and create it again: same name and target plan, a new UID, another assessment
    report that verifies. Returns (old object, new object)."""
    old = api_server.get_object("RuntimeRollout", name)
    old_digest = old["spec"]["assessment"]["digest"]
    configmap = api_server.get_object("ConfigMap", "aicr-assessment-" + old_digest[7:23])
    report = configmap["data"]["report.json"].replace("nvsentinel", "nvsentinel-x")
    assert report != configmap["data"]["report.json"]
    new_digest = "sha256:" + hashlib.sha256(report.encode()).hexdigest()
    other = copy.deepcopy(configmap)
    meta = other["metadata"]
    other["metadata"] = {"name": "aicr-assessment-" + new_digest[7:23], "namespace": meta["namespace"],
                         "labels": meta.get("labels", {}),
                         "annotations": {k: (new_digest if v == old_digest else v)
                                         for k, v in (meta.get("annotations") or {}).items()}}
    other["data"]["report.json"] = report
    api_server.put_object(other)
    api_server.delete_object("RuntimeRollout", name)
    new = copy.deepcopy(old)
    new["metadata"].pop("resourceVersion", None)
    new["metadata"]["uid"] = str(uuid.uuid4())
    new["spec"]["assessment"]["digest"] = new_digest
    api_server.put_object(new)
    return old, api_server.get_object("RuntimeRollout", name)


def _binding_flags(describe_stdout):
    lines = [line for line in describe_stdout.splitlines() if line.startswith("Decide on exactly this: ")]
    assert len(lines) == 1, describe_stdout
    words = dict(word.partition("=")[::2] for word in shlex.split(lines[0]) if "=" in word)
    return {flag: words[flag] for flag in ("--expect-uid", "--expect-digest", "--expect-assessment")}


def test_describe_prints_the_binding_and_approve_refuses_a_recreated_rollout(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    kubeconfig = kubeconfig_for(ALICE)
    shown = run("describe", name, kubeconfig=kubeconfig)
    assert shown.returncode == 0, shown.stderr
    flags = _binding_flags(shown.stdout)
    assert "Decide on exactly this: kubectl aicr approve %s --expect-uid=" % name in shown.stdout
    old, new = _recreate_with_another_report(api_server, name)
    assert flags["--expect-uid"] == old["metadata"]["uid"] != new["metadata"]["uid"]
    assert new["spec"]["assessment"]["digest"].startswith("sha256:")
    again = run("describe", name, kubeconfig=kubeconfig)
    assert again.returncode == 0, again.stderr  # the new report verifies
    api_server.clear_requests()
    result = run("approve", name, "--reason", "r", *[w for pair in flags.items() for w in pair],
                 kubeconfig=kubeconfig)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    error = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(error) == 1
    assert "--expect-uid" in error[0] and new["metadata"]["uid"] in error[0]
    assert "--expect-assessment" in error[0] and "nothing was written" in error[0]
    assert _patches(api_server) == []
    assert "approval" not in api_server.get_object("RuntimeRollout", name)["spec"]


@pytest.mark.parametrize("flag", ["--expect-uid", "--expect-assessment"])
def test_each_binding_flag_alone_refuses(run, api_server, kubeconfig_for, flag):
    name = api_server.fixture_name("awaiting-approval")
    flags = _binding_flags(run("describe", name, kubeconfig=kubeconfig_for(ALICE)).stdout)
    _recreate_with_another_report(api_server, name)
    api_server.clear_requests()
    result = run("approve", name, "--reason", "r", "--expect-digest", flags["--expect-digest"], flag, flags[flag],
                 kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 1 and flag in result.stderr, result.stderr
    assert _patches(api_server) == []


@pytest.mark.parametrize("command,role,args", [
    ("approve", "awaiting-approval", ["--reason", "r"]),
    ("revoke", "approved-rolling-out", ["--reason", "r"]),
    ("acknowledge", "awaiting-acknowledgement", []),
])
def test_the_binding_describe_prints_is_accepted(run, api_server, kubeconfig_for, command, role, args):
    name = api_server.fixture_name(role)
    shown = run("describe", name, kubeconfig=kubeconfig_for(ALICE))
    assert "kubectl aicr %s %s" % (command, name) in shown.stdout
    flags = _binding_flags(shown.stdout)
    result = run(command, name, *args, *[w for pair in flags.items() for w in pair], kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    assert [r.status for r in _patches(api_server)] == [200]


def test_a_malformed_expect_assessment_is_a_usage_error(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    result = run("approve", name, "--reason", "r", "--expect-assessment", "abc", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 2 and "--expect-assessment" in result.stderr
    assert _patches(api_server) == []


# ---------------------------------------------------------------------------------------------
# A write whose answer was lost

COMMANDS = [("approve", "awaiting-approval", ["--reason", "lost answer"], "approval"),
            ("revoke", "approved-rolling-out", ["--reason", "lost answer"], "revocation"),
            ("acknowledge", "awaiting-acknowledgement", [], "acknowledgements")]


def _alice_entries(obj, field):
    value = obj["spec"].get(field)
    values = value if isinstance(value, list) else [value] if value else []
    return [v for v in values if isinstance(v, dict) and v.get("user") == ALICE]


@pytest.mark.parametrize("fault", ["store-close", "store-reset", "store-conflict"])
@pytest.mark.parametrize("command,role,args,field", COMMANDS)
def test_a_stored_write_whose_answer_was_lost_succeeds(run, api_server, kubeconfig_for, fault, command, role, args,
                                                       field):
    name = api_server.fixture_name(role)
    api_server.set_fault(fault, count=1, method="PATCH")
    result = run(command, name, *args, kubeconfig=kubeconfig_for(ALICE))
    stored = _alice_entries(api_server.get_object("RuntimeRollout", name), field)
    assert len(stored) == 1, "the fault must store the write"
    assert result.returncode == 0, result.stderr
    assert "error:" not in result.stderr and "already" not in result.stderr
    assert "shows this decision recorded" in result.stderr
    assert result.stdout.startswith("rollout %s" % name) and ALICE in result.stdout
    assert [r.fault for r in _patches(api_server)] == [fault]  # never sent twice


def test_an_answer_cut_mid_body_is_recognised(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("close-mid-body", count=1, method="PATCH")
    result = run("approve", name, "--reason", "cut", kubeconfig=kubeconfig_for(ALICE))
    assert len(_alice_entries(api_server.get_object("RuntimeRollout", name), "approval")) == 1
    assert result.returncode == 0, result.stderr
    assert "in the middle of a response" in result.stderr and "shows this decision recorded" in result.stderr


def test_no_time_left_to_read_again_says_the_write_may_have_been_recorded(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    held = api_server.fault_hang_seconds
    api_server.fault_hang_seconds = 40
    try:
        api_server.set_fault("store-hang", count=1, method="PATCH")
        result = run("approve", name, "--reason", "held", kubeconfig=kubeconfig_for(ALICE), timeout=90)
    finally:
        api_server.fault_hang_seconds = held
    assert len(_alice_entries(api_server.get_object("RuntimeRollout", name), "approval")) == 1
    assert result.returncode == 4  # errors.UnknownOutcome: it may have been recorded
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert "deadline" in errors[0]
    assert "the write may have been recorded; check with kubectl aicr describe %s" % name in errors[0]
    assert "nothing was written" not in result.stderr


def test_a_lost_answer_of_a_write_that_did_not_land_is_sent_again(run, api_server, kubeconfig_for):
    """A reset before anything is stored: the re-read shows the same facts and no entry; the same patch is sent
    again and lands once."""
    name = api_server.fixture_name("awaiting-approval")
    api_server.set_fault("reset", count=1, method="PATCH")
    result = run("approve", name, "--reason", "again", kubeconfig=kubeconfig_for(ALICE))
    assert result.returncode == 0, result.stderr
    sent = _patches(api_server)
    assert len(sent) == 2 and json.loads(sent[0].body) == json.loads(sent[1].body)
    assert len(_alice_entries(api_server.get_object("RuntimeRollout", name), "approval")) == 1


# ---------------------------------------------------------------------------------------------
# One parser of digest prefixes; Go's duration bound


def test_reproduce_takes_a_bare_16_hex_prefix(run, api_server, kubeconfig_for, tmp_path):
    bare = run("reproduce", "07ed50388c1d8b9f", "--dir", str(tmp_path / "a"), kubeconfig=kubeconfig_for(ALICE))
    prefixed = run("reproduce", "sha256:07ed50388c1d8b9f", "--dir", str(tmp_path / "b"),
                   kubeconfig=kubeconfig_for(ALICE))
    assert prefixed.returncode == 0, prefixed.stderr
    assert bare.returncode == 0, bare.stderr
    def files_in(folder):  # reproduce writes into a folder of its own under --dir
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    files = files_in(tmp_path / "a")
    assert files and files == files_in(tmp_path / "b")
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert bare.stdout.replace(str(tmp_path / "a"), "D") == prefixed.stdout.replace(str(tmp_path / "b"), "D")
    short = run("reproduce", "07ed50388c1d8b9", kubeconfig=kubeconfig_for(ALICE))
    assert short.returncode == 2


@pytest.mark.parametrize("text", ["07ed50388c1d8b9f", "sha256:07ed50388c1d8b9f", "a" * 64])
def test_one_digest_prefix_parser(text):
    assert cli.digest_prefix(text) == "sha256:" + text.replace("sha256:", "")
    assert cli.checked_expected_digest(text) == cli.digest_prefix(text)


@pytest.mark.parametrize("text", ["07ed50388c1d8b9", "07ED50388C1D8B9F", "sha256:", "a" * 65, "sha512:" + "a" * 16])
def test_not_a_digest_prefix(text):
    assert cli.digest_prefix(text) is None


@pytest.mark.parametrize("text,nanoseconds", [
    ("2562047h47m16.854775807s", (1 << 63) - 1),
    ("9223372036854775807ns", (1 << 63) - 1),
    ("9223372036.854775807s", (1 << 63) - 1),
    ("-2562047h47m16.854775808s", -(1 << 63)),
    ("-9223372036854775808ns", -(1 << 63)),
    ("1.5h", 5400 * 10 ** 9),
    ("0" * 5000 + "1s", 10 ** 9),  # Go's leadingInt reads leading zeros; Python's int() refuses 4,301 digits
])
def test_go_duration_bound_accepted(text, nanoseconds):
    assert cli.parse_duration(text) == nanoseconds / 1e9


@pytest.mark.parametrize("text", ["2562047h47m16.854775808s", "9223372036854775808ns", "2562048h",
                                  "9223372036.854775808s", "2562047h47m17s", "-9223372036854775809ns",
                                  "99999999999999999999ns", "1" * 5000 + "s", "1" * 5000 + ".5h"])
def test_go_duration_bound_refused(text):
    with pytest.raises(UsageError, match="longer than Go's largest duration"):
        cli.parse_duration(text)


def test_expires_one_nanosecond_over_is_refused_by_the_plugin(run, api_server, kubeconfig_for):
    name = api_server.fixture_name("awaiting-approval")
    over = run("approve", name, "--reason", "r", "--expires", "2562047h47m16.854775808s",
               kubeconfig=kubeconfig_for(ALICE))
    assert over.returncode == 2 and "longer than Go's largest duration" in over.stderr, over.stderr
    assert _patches(api_server) == []
