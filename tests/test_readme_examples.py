"""Every ``$ kubectl aicr ...`` example of README.md runs as written against the test API server (issue 16).

Each fenced code block of README.md that holds ``$ kubectl aicr`` lines is one test: its lines run in the
block's order through the built dist/kubectl-aicr, with a kubeconfig that names a context per test user as
the README's playground does (``alice`` current, ``bob``, ``carol``, ...: tests/serve.py writes the same with
``write_kubeconfig_all``), on the demo fixtures as loaded (the ``api_server`` fixture restores them before
each test, so each block starts from them whatever ran before). For each line: exit status 0 unless the
README shows an ``error:`` line under it (then non-zero), no traceback or internal error, and the first shown
output line and the shown ``error:`` line found in the real output (RFC 3339 times and ``...`` compared as
wildcards, runs of blanks as blanks). An example whose output needs another client's write first (its
comment says so) gets that write landed by the server between the command's read and its write
(``APIServer.interpose``).
"""

import os
import re
import shlex

import pytest

from tests.support import interpositions
from tests.support.plugin import ROOT

pytestmark = pytest.mark.e2e

README = os.path.join(ROOT, "README.md")
RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")


def readme_blocks():
    """[(first line number, [(command line, [shown output lines])])] for each fenced block with examples."""
    blocks, current, inside, start = [], None, False, 0
    with open(README, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            if inside and current:
                blocks.append((start, current))
            inside, current, start = not inside, [], number + 1
            continue
        if not inside:
            continue
        if line.startswith("$ "):
            current.append((line[2:], []))
        elif current:
            current[-1][1].append(line)
    return [(start, [(command, [o for o in output if o.strip()]) for command, output in block])
            for start, block in blocks if any(c.startswith("kubectl aicr") for c, _ in block)]


BLOCKS = readme_blocks()


def shown_pattern(line):
    """A regex for a whole shown output line: times and ``...`` as wildcards, runs of blanks as blanks."""
    parts = []
    for piece in re.split(r"(\.\.\.|%s|\s+)" % RFC3339.pattern, line.strip()):
        if not piece:
            continue
        if piece == "...":
            parts.append(r".*?")
        elif RFC3339.fullmatch(piece):
            parts.append(r"\S+")
        elif piece.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(piece))
    return re.compile(r"^\s*%s\s*$" % "".join(parts), re.M)


def bob_acknowledged_and_operator_moved_on(api_server, name):
    """The README's ``# bob acknowledged first, and the operator moved on``: between alice's read and her
    write, bob acknowledges the release she was shown and the operator moves on to gpu-operator."""
    rollout = api_server.get_object("RuntimeRollout", name)
    release = rollout["status"]["awaitingAcknowledgement"]["release"]
    acknowledged = interpositions.acknowledged_by_another(rollout, "aicr-system")
    moved = [interpositions._status_patch(rollout, [
        {"op": "add", "path": "/status/awaitingAcknowledgement", "value": {"release": "gpu-operator"}}])]
    assert release == "nvsentinel" and acknowledged
    api_server.interpose(name, acknowledged + moved)


# README comments that name another client's write, and how the test lands it.
SET_UPS = {"bob acknowledged first, and the operator moved on": bob_acknowledged_and_operator_moved_on}


def test_every_readme_example_is_collected():
    commands = [c for _, block in BLOCKS for c, _ in block]
    with open(README, encoding="utf-8") as handle:
        in_text = [line[2:] for line in handle.read().splitlines() if line.startswith("$ kubectl aicr")]
    assert commands == in_text and len(commands) >= 10
    assert all(output for _, block in BLOCKS for _, output in block), "an example shows no output"


@pytest.mark.parametrize("start,block", BLOCKS, ids=["README.md:%d" % start for start, _ in BLOCKS])
def test_readme_example_block_runs_as_shown(start, block, api_server, run, tmp_path):
    kubeconfig = api_server.write_kubeconfig_all(str(tmp_path / "kubeconfig"))
    for command, shown in block:
        argv = shlex.split(command, comments=True)
        assert argv[:2] == ["kubectl", "aicr"], command
        set_up = [f for words, f in SET_UPS.items() if words in command]
        name = next((a for a in argv if a.startswith("rollout-")), None)
        try:
            for f in set_up:
                f(api_server, name)
            result = run(*argv[2:], kubeconfig=kubeconfig, cwd=str(tmp_path))
        finally:  # a write that never came leaves its interposition: drop it, it must not reach another test
            with api_server._lock:
                api_server._interpositions[:] = [i for i in api_server._interpositions if i[0] != name]
        output = result.stdout + result.stderr
        where = "README.md:%d: $ %s\n--- stdout\n%s--- stderr\n%s" % (start, command, result.stdout, result.stderr)
        if set_up:
            assert any(r.method == "INTERPOSE" for r in api_server.requests), where
        errors = [line for line in shown if line.startswith("error:")]
        assert (result.returncode != 0) == bool(errors), where
        assert "Traceback" not in output and "internal error" not in output, where
        for line in [shown[0]] + errors:
            assert shown_pattern(line).search(output), "%s\nnot found: %s" % (where, line)
