"""make serve's program (tests/serve.py): used from a second process through the KUBECONFIG it prints, stopped
with SIGINT (Ctrl-C), as a user does with two terminals."""

import os
import re
import shlex
import signal
import subprocess
import sys

import pytest

from tests.support.plugin import ROOT, base_env, plugin_command

pytestmark = pytest.mark.e2e


def readme_try_it():
    """The ``kubectl aicr`` lines of the README's "Try it" section."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        section = readme.read().split("\n## Try it\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.split("\n") if line.startswith("kubectl aicr ")]
    assert len(lines) >= 4
    return lines


def read_banner(process):
    """The lines serve prints up to its 'Press Ctrl-C' line."""
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if line.startswith("Press Ctrl-C"):
            return lines
    raise AssertionError("serve ended before it was ready:\n%s" % "\n".join(lines))


@pytest.fixture
def serve(plugin, tmp_path):
    process = subprocess.Popen([sys.executable, "-m", "tests.serve", "--dir", str(tmp_path / "playground")],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                               env=dict(base_env(tmp_path), PYTHONPATH=ROOT))
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_make_serve_runs_this_program():
    with open(os.path.join(ROOT, "Makefile")) as makefile:
        text = makefile.read()
    target = re.search(r"^serve:.*\n((?:\t.*\n)+)", text, re.M)
    assert target and "-m tests.serve" in target.group(1)


def test_a_second_terminal_uses_the_printed_kubeconfig_then_ctrl_c_stops_it(serve, plugin, tmp_path):
    banner = read_banner(serve)
    text = "\n".join(banner)
    assert "No operator runs behind it" in text
    exports = [line.strip() for line in banner if line.strip().startswith("export KUBECONFIG=")]
    assert len(exports) == 1
    kubeconfig = exports[0][len("export KUBECONFIG="):]
    assert os.path.isfile(kubeconfig)
    names = re.findall(r"^  (rollout-[0-9a-f]{16}-\d+)\s+(\S+)\s+\S", text, re.M)
    assert len(names) == 13

    def second_terminal(*args):
        env = dict(base_env(tmp_path), KUBECONFIG=kubeconfig)
        return subprocess.run(plugin_command(plugin) + list(args), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60)

    listed = second_terminal("list", "--all")
    assert listed.returncode == 0, listed.stderr
    for name, phase in names:  # what serve says each one shows is what list shows
        assert re.search(r"^%s\s+%s\s" % (name, phase), listed.stdout, re.M), name
    for line in readme_try_it():  # the README's "Try it" commands, as a user pastes them
        argv = shlex.split(line, comments=True)
        result = second_terminal(*argv[2:])
        assert result.returncode == (3 if "exit 3" in line else 0), "%s\n%s" % (line, result.stderr)
    upgrade = names[0][0]
    after = second_terminal("describe", upgrade, "--context", "carol")
    assert re.search(r"^Approval:\s+approved by alice@example.com until ", after.stdout, re.M)
    assert re.search(r"^Phase:\s+AwaitingApproval$", after.stdout, re.M)  # no operator: the phase stays

    serve.send_signal(signal.SIGINT)
    out, err = serve.communicate(timeout=20)
    assert serve.returncode == 0, err
    assert "stopped" in out and "Traceback" not in err
    gone = second_terminal("list")
    assert gone.returncode == 1 and gone.stderr.startswith("error: ")  # the server is gone
