"""Exec credential plugins within the deadline, and exec output that repeats a key.

client-go runs a plugin with ``cmd.Run`` and a bytes.Buffer as its stdout: Go copies the pipe to
end of file, so kubectl waits for every process holding the plugin's stdout (a background
process the plugin started) as well as for the plugin to exit (checked with the real kubectl:
a plugin that prints a credential, starts ``sleep 45 &`` and exits 0 is used after 45 s). The
plugin waits the same way, but never past the deadline: there it kills the plugin's process
group and reports it then. Most tests here call the runner in-process with a short
``rest.Deadline``; one runs the built file against the 30-second deadline itself.
"""

import os
import signal
import time

import pytest
import yaml

from kubectl_aicr.errors import AuthError, TransportError
from kubectl_aicr.kube import exec_credential, kubeconfig, rest

V1 = "client.authentication.k8s.io/v1"
CLUSTER = kubeconfig.Cluster(name="c", server="https://127.0.0.1:1")
SLACK = 1.5  # seconds past the deadline the error may come (process start-up, a loaded machine)


def credential(token="t0k"):
    return ('{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s"}}' % (V1, token))


def script(tmp_path, body, name="plugin"):
    path = str(tmp_path / name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


def spec_for(command, *args):
    return kubeconfig.ExecConfig(command=command, args=tuple(args), api_version=V1, interactive_mode="Never")


def alive(pid):
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid, seconds=3.0):
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


@pytest.fixture
def leftovers():
    """Pids a test started through a plugin; any still alive afterwards are killed (and fail the test
    where it asserts they are gone)."""
    pids = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def timed_failure(spec, seconds, error=TransportError):
    started = time.monotonic()
    with pytest.raises(error) as caught:
        exec_credential.run(spec, CLUSTER, rest.Deadline(seconds))
    return str(caught.value), time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# The deadline


def test_a_plugin_whose_child_sleeps_is_stopped_at_the_deadline_with_the_child(tmp_path, leftovers):
    """``sh -c "sleep N"``: the shell's child held stdout, so the error came only after N seconds."""
    pid_file = tmp_path / "pid"
    spec = spec_for("sh", "-c", "sleep 20 & echo $! > %s; wait" % pid_file)
    message, elapsed = timed_failure(spec, 1.0)
    leftovers.append(int(pid_file.read_text()))
    assert "exec plugin sh did not finish within the 1-second deadline" in message
    assert 1.0 <= elapsed < 1.0 + SLACK
    assert wait_gone(leftovers[0]), "the plugin's child outlived the deadline"


def test_sleep_then_true_is_stopped_at_the_deadline(tmp_path):
    message, elapsed = timed_failure(spec_for("sh", "-c", "sleep 20; true"), 1.0)
    assert message.endswith("did not finish within the 1-second deadline")
    assert 1.0 <= elapsed < 1.0 + SLACK


def test_a_credential_with_a_background_process_holding_stdout_fails_at_the_deadline(tmp_path, leftovers):
    """The plugin prints a valid credential, starts ``sleep &`` (holding stdout) and exits 0:
    kubectl waits for the pipe to close; so does the plugin, up to the deadline and not past it."""
    pid_file = tmp_path / "pid"
    path = script(tmp_path, "echo '%s'\nsleep 20 &\necho $! > %s\nexit 0\n" % (credential(), pid_file))
    message, elapsed = timed_failure(spec_for(path), 1.5)
    leftovers.append(int(pid_file.read_text()))
    assert message == ("getting credentials: exec plugin %s did not finish within the 1-second deadline "
                       "(it exited, but a process it started still holds its standard output open)" % path)
    assert 1.5 <= elapsed < 1.5 + SLACK
    assert wait_gone(leftovers[0]), "the background process outlived the deadline"


def test_a_credential_is_used_once_the_background_process_closes_stdout_within_the_deadline(tmp_path):
    """As kubectl: the run ends at end of file, so a short-lived background process only delays it."""
    path = script(tmp_path, "echo '%s'\nsleep 1 &\nexit 0\n" % credential("late"))
    started = time.monotonic()
    result = exec_credential.run(spec_for(path), CLUSTER, rest.Deadline(10))
    assert result.token == "late" and 1.0 <= time.monotonic() - started < 1.0 + SLACK


def test_a_background_process_that_let_go_of_stdout_is_left_running(tmp_path, leftovers):
    """A helper the plugin started with its own stdout (an agent, a cache) is not the plugin's output:
    kubectl neither waits for it nor kills it, and neither does the plugin."""
    pid_file = tmp_path / "pid"
    path = script(tmp_path, "echo '%s'\nsleep 20 >/dev/null &\necho $! > %s\nexit 0\n" % (credential(), pid_file))
    started = time.monotonic()
    assert exec_credential.run(spec_for(path), CLUSTER, rest.Deadline(10)).token == "t0k"
    assert time.monotonic() - started < SLACK
    leftovers.append(int(pid_file.read_text()))
    assert alive(leftovers[0])


def test_a_plugin_that_closes_stdout_and_keeps_running_is_stopped_at_the_deadline(tmp_path):
    path = script(tmp_path, "echo '%s'\nexec >&-\nsleep 20\n" % credential())
    message, elapsed = timed_failure(spec_for(path), 1.0)
    assert message.endswith("did not finish within the 1-second deadline")
    assert 1.0 <= elapsed < 1.0 + SLACK


def test_too_much_output_stops_the_plugin_and_its_group(tmp_path, leftovers):
    pid_file = tmp_path / "pid"
    path = script(tmp_path, "sleep 20 &\necho $! > %s\nexec yes\n" % pid_file)
    message, elapsed = timed_failure(spec_for(path), 10, AuthError)
    leftovers.append(int(pid_file.read_text()))
    assert "wrote more than %d bytes" % exec_credential.MAX_OUTPUT_BYTES in message and elapsed < SLACK
    assert wait_gone(leftovers[0])


@pytest.mark.e2e
def test_the_built_file_reports_a_stuck_plugin_at_30_seconds(run, api_server, tmp_path, leftovers):
    """End to end, the real 30-second deadline: a plugin that prints bob's valid credential and leaves
    ``sleep 45 &`` holding its stdout (kubectl succeeds after 45 s) is reported at 30 s, not at 46."""
    pid_file = tmp_path / "pid"
    path = script(tmp_path, "echo '%s'\nsleep 45 &\necho $! > %s\nexit 0\n"
                  % (credential(api_server.token("bob@example.com")), pid_file))
    config = api_server.kubeconfig(users=["bob@example.com"])
    config["users"][0]["user"] = {"exec": {"apiVersion": V1, "command": path, "interactiveMode": "Never"}}
    config_path = tmp_path / "config"
    config_path.write_text(yaml.safe_dump(config))
    started = time.monotonic()
    result = run("describe", api_server.fixture_name("install"), kubeconfig=config_path, timeout=50)
    elapsed = time.monotonic() - started
    leftovers.append(int(pid_file.read_text()))
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "error: getting credentials: exec plugin %s did not finish within the 30-second deadline (it exited, "
        "but a process it started still holds its standard output open)" % path]
    assert 29.5 <= elapsed < 30 + 2 * SLACK
    assert not api_server.requests
    assert wait_gone(leftovers[0])


# ---------------------------------------------------------------------------------------------
# Repeated keys


@pytest.mark.parametrize("output, path", [
    ('{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"x","token":"SECRET"}}' % V1, "status.token"),
    ('{"apiVersion":"%s","kind":"ExecCredential","kind":"ExecCredential","status":{"token":"SECRET"}}' % V1,
     "kind"),
    ('{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"SECRET","x":[{"a":1,"a":2}]}}' % V1,
     "status.x[0].a"),
    ('{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"SECRET","\\u001b[2J":{"q":1,"q":1}}}' % V1,
     'status."\\u001b[2J".q'),
])
def test_json_output_that_repeats_a_key_is_refused_naming_the_key(output, path):
    """client-go keeps the last value (tests/kubeconfig_corpus.py: exec_plugin_prints_json_with_a_repeated_key);
    the plugin refuses: which credential the plugin meant is ambiguous."""
    with pytest.raises(AuthError) as caught:
        exec_credential.parse_output(output.encode(), spec_for("p"))
    assert str(caught.value) == "getting credentials: exec plugin p: decoding stdout: duplicate key %s" % path
    assert "SECRET" not in str(caught.value) and "\x1b" not in str(caught.value)


def test_yaml_output_that_repeats_a_key_is_refused_too():
    output = b"apiVersion: %s\nkind: ExecCredential\nstatus:\n  token: x\n  token: SECRET\n" % V1.encode()
    with pytest.raises(AuthError) as caught:
        exec_credential.parse_output(output, spec_for("p"))
    assert "not valid YAML (line 5" in str(caught.value) and "SECRET" not in str(caught.value)


def test_json_output_with_distinct_keys_is_read():
    output = '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"x","Token":"y"},"spec":{}}' % V1
    assert exec_credential.parse_output(output.encode(), spec_for("p")).token == "x"
