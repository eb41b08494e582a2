"""Fuzzing with hypothesis: the YAML reader on arbitrary text and the argument parser on arbitrary argv
give a value or one clear error, never a traceback."""

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_aicr import cli, main, output
from kubectl_aicr.kube.yaml import reader as yamlreader
from kubectl_aicr.errors import UsageError, YAMLError

YAML_PIECES = ["a", "b: ", ": ", "- ", "-", "? ", "[", "]", "{", "}", ",", "\"", "'", "|", ">", "|-", "&x ", "*x",
               "!!binary ", "!!str ", "#", " ", "  ", "\t", "\n", "\r\n", "---", "...", "%YAML 1.2", "\\", "\x00",
               "\ufeff", "é", "null", "true", "0x1F", "1e3", "~",
               "<<: ", "<<", "!!merge ", "!foo ", "!!timestamp ", "yes", "017", "1_0", ".nan", "-.inf", "0b1"]

yaml_text = st.one_of(st.text(max_size=200),
                      st.lists(st.sampled_from(YAML_PIECES), max_size=60).map("".join))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_text)
def test_yaml_reader_gives_a_value_or_a_clear_error(text):
    for schema in (yamlreader.CORE, yamlreader.GO_YAML):   # YAML 1.2, and kubeconfig as kubectl reads it
        try:
            yamlreader.load(text, filename="fuzz.yaml", schema=schema)
        except YAMLError as exc:
            message = str(exc)
            assert message.startswith("fuzz.yaml:") and exc.line >= 1 and exc.column >= 1
            assert "internal error" not in message, message


FLAG_WORDS = [flag for flag, _, _ in cli.FLAGS] + ["-h", "--help", "--version", "--", "-", "--kube", "--x=y"]
ARGV_PIECES = list(cli.COMMANDS) + FLAG_WORDS + ["rollout-1", "", "=", "2h", "-1h", "sha256:" + "a" * 64, "é\x1b"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(ARGV_PIECES), st.text(max_size=12)), max_size=8))
def test_argument_parser_gives_an_invocation_help_or_a_usage_error(argv):
    try:
        invocation = cli.parse(argv)
    except cli.HelpRequested as shown:
        assert shown.text
    except UsageError as exc:
        assert str(exc)
        # What the user sees: exactly one line, `error: ...`, then only the error's hints (an unknown flag's
        # suggestion and where the usage is, as kubectl prints them), exit status 2, whatever the argv held.
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            assert main.main(list(argv)) == 2
        lines = stderr.getvalue().split("\n")
        assert lines[0].startswith("error: ") and lines[-1] == "" and len(lines) == 2 + len(exc.hints)
        assert not any(line.startswith("error: ") for line in lines[1:])
    else:
        assert invocation.command in cli.COMMANDS


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=12))
def test_durations_parse_or_are_refused(text):
    try:
        seconds = cli.parse_duration(text)
    except UsageError as exc:
        assert "invalid duration" in str(exc)
    else:
        assert isinstance(seconds, float)


# ---------------------------------------------------------------------------------------------
# Every object field and response header the plugin reads, hostile, through every command

import hashlib
import json
import signal
import sys

from kubectl_aicr.aicr import objects

# Text no real API server sends but a hostile one can: lone surrogate escapes, times at the ends of the
# calendar, controls, invisible and blank-looking characters, characters no Latin-1 terminal shows.
EDGE_TEXT = ["\ud800", "a\udfffb", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "10000-01-01T00:00:00Z",
             "\x1b[2J", "\u2800\u3164\u115f\u1160\uffa0", "\u2713", "\u202e", "sha256:" + "a" * 64, "", "-1"]
any_text = st.one_of(st.sampled_from(EDGE_TEXT), st.text(st.characters(exclude_categories=()), max_size=20))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False) | any_text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(any_text, children, max_size=3),
    max_leaves=8)

ROLLOUT_FIELDS = ["metadata.name", "metadata.uid", "spec.runtimeRef", "spec.runtimeRef.uid", "spec.from",
                  "spec.from.desiredStateDigest", "spec.to.desiredStateDigest", "spec.deadline",
                  "spec.approvalRequired", "spec.startingInventory.releases", "spec.startingInventory.digest",
                  "spec.steps", "spec.transitionRecords", "spec.approval", "spec.approval.user",
                  "spec.approval.expires", "spec.revocation", "spec.revocation.time", "spec.acknowledgements",
                  "status.phase", "status.outcome", "status.message", "status.awaitingAcknowledgement",
                  "status.awaitingAcknowledgement.release", "status.steps"]
REPORT_FIELDS = ["from", "to", "deployer", "components", "summary", "summary.components", "summary.failing",
                 "atRisk", "atRisk.scanned", "atRisk.objects"]
PLAN_FIELDS = ["data.recipe.json", "data.recipeDigest", "data.renderFlags", "data.aicrImage", "data.bundle",
               "metadata.annotations.operator.aicr.run/source"]
RUNTIME_FIELDS = ["status.activePlan", "status.candidatePlan"]
HEADERS = {"Date": st.one_of(st.sampled_from(["Fri, 31 Dec 9999 23:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
                                              "Fri, 31 Dec 9999 23:30:00 -0100", "Mon, 01 Jan 0001 00:00:00 +0100",
                                              "Thu, 01 Jan 1970 00:00:00 GMT", "", "garbage"]),
                             st.text(st.characters(min_codepoint=0x20, max_codepoint=0xff), max_size=40)),
           "Content-Type": st.sampled_from(["text/html", "application/json; charset=latin-1", "", "\xff"]),
           "Content-Length": st.sampled_from(["0", "1", "-1", "x", "99999999999999999999", "12"])}
COMMANDS = [["describe", "{rollout}"], ["approve", "{rollout}", "--reason", "r", "--expires", "2h"],
            ["approve", "{rollout}", "--reason", "r"], ["revoke", "{rollout}", "--reason", "r"],
            ["acknowledge", "{rollout}"], ["reproduce", "--dir", "{folder}"], ["reproduce", "{plan}", "--dir", "{folder}"]]


def _set(obj, path, value):
    """Set a dotted path; the plan's data keys and annotation names hold dots, so the rest is one key."""
    keys = path.split(".", 1) if path.startswith(("data.", "metadata.annotations.")) else path.split(".")
    if path.startswith("metadata.annotations."):
        keys = ["metadata", "annotations", path[len("metadata.annotations."):]]
    for key in keys[:-1]:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj[keys[-1]] = value


def _changes(fields):
    return st.dictionaries(st.sampled_from(fields), json_values, max_size=3)


def _put(api_server, obj):
    obj["metadata"].pop("resourceVersion", None)
    api_server.put_object(obj)


def _put_report(api_server, rollout, changes, whole_text):
    """The rollout's report ConfigMap with fields changed; re-hashed (so it verifies) when it is text."""
    report = api_server.fixture("report-candidate")
    document = json.loads(report["data"]["report.json"])
    for path, value in changes.items():
        _set(document, path, value)
    text = whole_text if whole_text is not None else json.dumps(document)
    report["data"]["report.json"] = text
    try:
        digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    except UnicodeEncodeError:
        digest = rollout["spec"]["assessment"]["digest"]
    report["metadata"]["name"] = objects.assessment_configmap_name(digest)
    rollout["spec"]["assessment"] = {"digest": digest}
    _put(api_server, report)


def _put_plan(api_server, changes):
    plan = api_server.fixture("plan-active")
    for path, value in changes.items():
        _set(plan, path, value)
    recipe = plan["data"].get("recipe.json")
    if isinstance(recipe, str) and "data.recipeDigest" not in changes:
        try:
            plan["data"]["recipeDigest"] = "sha256:" + hashlib.sha256(recipe.encode("utf-8")).hexdigest()
        except UnicodeEncodeError:
            pass
    _put(api_server, plan)
    return plan["metadata"]["name"]


@pytest.mark.e2e
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(command=st.sampled_from(COMMANDS), role=st.sampled_from(["awaiting-approval", "awaiting-acknowledgement",
                                                                "approved-rolling-out"]),
       rollout_changes=_changes(ROLLOUT_FIELDS), report_changes=_changes(REPORT_FIELDS),
       report_text=st.none() | any_text, plan_changes=_changes(PLAN_FIELDS), runtime_changes=_changes(RUNTIME_FIELDS),
       headers=st.fixed_dictionaries({}, optional=HEADERS))
def test_every_command_ends_cleanly_on_hostile_fields_and_headers_in_any_locale(
        api_server, kubeconfig_for, tmp_path, monkeypatch, command, role, rollout_changes, report_changes,
        report_text, plan_changes, runtime_changes, headers):
    """A value of any type or text in any field the plugin reads, and any Date, Content-Type or
    Content-Length header: one clean result or ``error:`` line (exit 0-3, never 70), on a Latin-1 terminal."""
    snapshot = api_server.snapshot()
    handlers = {name: signal.getsignal(name) for name in (signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_for()))
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="iso8859-1", errors="strict", newline="\n")
    stderr = io.TextIOWrapper(io.BytesIO(), encoding="iso8859-1", errors="strict", newline="\n")
    try:
        rollout = api_server.fixture(role)
        name = rollout["metadata"]["name"]
        _put_report(api_server, rollout, report_changes, report_text)
        for path, value in rollout_changes.items():
            _set(rollout, path, value)
        rollout["metadata"]["name"] = name
        _put(api_server, rollout)
        plan = _put_plan(api_server, plan_changes)
        runtime = api_server.get_object("ClusterRuntime", "cluster")
        for path, value in runtime_changes.items():
            _set(runtime, path, value)
        _put(api_server, runtime)
        argv = [word.format(rollout=name, plan=plan, folder=tmp_path / "out") for word in command]
        api_server.header_values.update(headers)
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(sys, "stderr", stderr)
        status = main.main(argv)
    finally:
        monkeypatch.undo()
        api_server.header_values.clear()
        api_server.restore(snapshot)
        for name, handler in handlers.items():
            signal.signal(name, handler)
    stdout.flush()
    stderr.flush()
    printed, errors = stdout.buffer.getvalue().decode("iso8859-1"), stderr.buffer.getvalue().decode("iso8859-1")
    assert status in (0, 1, 2, 3), errors
    assert "internal error" not in errors and "cannot write the output" not in errors, errors
    # stderr holds error:/warning: lines and, for a write command, what the decision rests on (shown before
    # it is written); never Python's own text
    assert not any(line.startswith(("Traceback", "Exception ignored", "  File \"")) for line in errors.splitlines())
    assert all(line.startswith("error: ") for line in errors.splitlines() if line.startswith("error"))
    assert (status == 0) == ("error: " not in errors), errors
    for text in (printed, errors):
        assert not [ch for ch in text.replace("\n", "") if output.safe(ch) != ch], text
