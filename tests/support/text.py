"""Checks of what the plugin prints: hostile text and its escaping, ``Label:  value`` lines, the one
``error:`` line of a failure, list's table, reproduce's command lines, describe's output for the
awaiting-approval fixture (shared by the test server's tier and the real one)."""

import re

HOSTILE = "x\x1b[2J\x1b]0;pwned\x07\r\x08\x9b31m\u202eevil\u2066\n\x00end"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def clean(text):
    """No control characters other than the newlines that end lines, and nothing else of the escaped class
    (invisible, blank-looking; tests/test_output.py checks that class against Unicode's data)."""
    from kubectl_aicr import output
    return RAW_CONTROL.search(text) is None and all(output.safe(ch) == ch for ch in text.replace("\n", ""))


def field(text, label):
    match = re.search(r"^%s:\s+(.*)$" % re.escape(label), text, re.M)
    assert match, "no %r line in:\n%s" % (label, text)
    return match.group(1)


def one_error_line(result, *words, before=()):
    """The one line a failed run prints: exit status 1, stderr exactly one newline-ended line that starts
    with ``error: `` and holds every one of ``words``, after exactly the lines ``before`` (what a credential
    plugin wrote to its stderr, which reaches the user). Returns that line (without its newline)."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert result.stderr == "".join(line + "\n" for line in lines), result.stderr
    assert lines[:-1] == list(before) and lines[-1:] and lines[-1].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[-1], (word, result.stderr)
    return lines[-1]


def command_lines(stdout):
    """The lines of ``stdout`` that are commands to paste (reproduce's docker, oras and diff)."""
    return [line for line in stdout.splitlines() if line.split(" ")[0] in ("docker", "oras", "diff")]


def list_table(text):
    """Rows of ``kubectl aicr list``'s output as {NAME: {column: cell}}, and the names in order."""
    lines = text.rstrip("\n").split("\n")
    header = lines[0]
    titles = ["NAME", "PHASE", "APPROVAL", "WAITING ON", "DEADLINE", "AGE"]
    starts = [header.index(t) for t in titles]
    assert starts == sorted(starts), header
    rows, order = {}, []
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows[cells[0]] = dict(zip(titles, cells))
        order.append(cells[0])
    return rows, order


def check_awaiting_approval(out, obj):
    """describe's output for the awaiting-approval fixture ``obj`` (as the server stores it); shared with
    the real-server tier (tests/test_real_e2e.py)."""
    assert field(out, "Name") == obj["metadata"]["name"]
    assert field(out, "UID") == obj["metadata"]["uid"]
    assert field(out, "Runtime") == "cluster (UID %s)" % obj["spec"]["runtimeRef"]["uid"]
    frm, to = obj["spec"]["from"]["desiredStateDigest"], obj["spec"]["to"]["desiredStateDigest"]
    assert field(out, "Transition") == "%s -> %s" % (frm[:23], to[:23])
    assert field(out, "Target plan") == to[:23]  # sha256: and 16 hex digits, as reproduce accepts them
    assert field(out, "Phase") == "AwaitingApproval" and field(out, "Outcome") == "<none>"
    assert field(out, "Deadline").startswith(obj["spec"]["deadline"] + " (in ")
    assert field(out, "Approval") == "required, pending"
    assert field(out, "Message") == obj["status"]["message"]
    inventory = obj["spec"]["startingInventory"]
    assert field(out, "Starting inventory") == "%d releases, %s" % (inventory["releases"], inventory["digest"][:23])
    # Digests are shortened to 16 hex digits everywhere but the line stating what the report was verified against.
    assert [line for line in out.splitlines() if re.search(r"[0-9a-f]{17}", line)] == \
        [line for line in out.splitlines() if line.startswith("Assessment:")]
    assert re.search(r"^  gpu-operator\s+Upgrade\s+manual\s+yes\s+Pending$", out, re.M)
    assert re.search(r"^  network-operator\s+Install\s+safe\s+yes\s+Pending$", out, re.M)
    assert "verified against %s" % obj["spec"]["assessment"]["digest"] in field(out, "Assessment")
    assert re.search(r"^  gpu-operator\s+version\s+25\.3\.0 -> 25\.10\.0\s+manual\s+", out, re.M)
    assert "Recorded steps:" in out and "    before: No drain is in progress." in out
    assert re.search(r"PostApply\s+reset-breaker", out)
