"""Usage lines and messages as kubectl gives them: dist/kubectl-aicr as a process (against the HTTPS test API
server where a request could be sent), the real kubectl (.venv/bin/kubectl) as the oracle of the wording."""

import os
import re
import subprocess

import pytest

from kubectl_aicr import cli

pytestmark = pytest.mark.e2e

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as handle:
        return handle.read()


def usage_lines(text):
    """The lines of a help text's ``usage:`` block, without ``usage:`` and the indentation."""
    block = text.split("\n\n", 1)[0]
    return [line.strip() for line in block.replace("usage:", "", 1).splitlines()]


def test_top_level_usage_agrees_with_the_readme(run):
    result = run("--help", env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    shown = usage_lines(result.stdout)
    section = read("README.md").split("\n## Usage\n", 1)[1]
    block = section.split("```\n", 2)[1]
    readme = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert shown == readme, (shown, readme)
    for command in cli.COMMANDS:  # every command is named, or stands for COMMAND ROLLOUT
        assert any(line.split()[2] in (command, "COMMAND") for line in shown), command
    assert any(line.startswith("kubectl aicr list") for line in shown)
    assert any(line.startswith("kubectl aicr version") for line in shown)


def test_kubectl_says_flag_needs_an_argument():
    """The oracle of the wording below (pflag, as kubectl prints it)."""
    result = subprocess.run([KUBECTL, "get", "pods", "--context"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, KUBECONFIG=os.devnull))
    assert result.returncode != 0
    assert result.stderr.splitlines()[0] == "error: flag needs an argument: --context", result.stderr
    result = subprocess.run([KUBECTL, "config", "view", "extra"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, KUBECONFIG=os.devnull))
    assert result.stderr.splitlines()[0] == "error: unexpected arguments: [extra]", result.stderr


@pytest.mark.parametrize("argv,lines", [
    (["describe", "r", "--context"],
     ["error: flag needs an argument: --context", "See 'kubectl aicr help describe' for usage."]),
    (["list", "--operator-namespace"],
     ["error: flag needs an argument: --operator-namespace", "See 'kubectl aicr help list' for usage."]),
    (["--kubeconfig"], ["error: flag needs an argument: --kubeconfig", "See 'kubectl aicr help' for usage."]),
    (["describe", "a", "b"], ["error: unexpected arguments: [b]", "See 'kubectl aicr help describe' for usage."]),
    (["reproduce", "p", "q", "r"],
     ["error: unexpected arguments: [q r]", "See 'kubectl aicr help reproduce' for usage."]),
    (["list", "extra"], ["error: unexpected arguments: [extra]", "See 'kubectl aicr help list' for usage."]),
    (["version", "x"], ["error: unexpected arguments: [x]", "See 'kubectl aicr help version' for usage."]),
])
def test_usage_errors_in_kubectls_words(run, argv, lines):
    result = run(*argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == lines
    assert "argument" not in result.stderr.replace("needs an argument", "").replace("unexpected arguments", "")


@pytest.mark.parametrize("namespace", ["A B", "../../..", "aicr-system/x", "Aicr-System", "-aicr", "aicr-",
                                       "a" * 64, "aicr.system", "aicr%2Fsystem"])
@pytest.mark.parametrize("command", [["describe", "awaiting"], ["reproduce"], ["approve", "r", "--reason", "x"]])
def test_operator_namespace_must_be_a_namespace_name(run, api_server, kubeconfig_for, tmp_path, namespace, command):
    result = run(*command, "--operator-namespace", namespace, "--dir", tmp_path / "out", kubeconfig=kubeconfig_for())
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid value ") and "--operator-namespace" in lines[0]
    assert ("no more than 63 characters" if len(namespace) > 63 else "RFC 1123 label") in lines[0]
    assert api_server.requests == [], "a request was sent"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("namespace", ["aicr-system", "a", "0", "a" * 63, "ns-1"])
def test_namespace_names_are_accepted(namespace):
    assert cli.checked_namespace(namespace) == namespace
    assert cli.parse(["describe", "r", "--operator-namespace", namespace]).operator_namespace == namespace


def test_dir_a_symbolic_link_to_a_file_says_so(run, api_server, kubeconfig_for, tmp_path):
    (tmp_path / "f").write_text("x")
    os.symlink("f", str(tmp_path / "s2"))
    os.symlink("nowhere", str(tmp_path / "s3"))
    seen = {}
    for name in ("s2", "s3", "f"):
        result = run("reproduce", "--dir", tmp_path / name, kubeconfig=kubeconfig_for())
        assert result.returncode == 1, result.stderr
        seen[name] = result.stderr.strip()
    assert seen["s2"].endswith("s2 is not a folder (a symbolic link to f, which is a file)"), seen["s2"]
    assert "broken" not in seen["s2"]
    assert seen["s3"].endswith("s3 is not a folder (a broken symbolic link to nowhere)"), seen["s3"]
    assert seen["f"].endswith("f is not a folder (a file)"), seen["f"]
    assert (tmp_path / "f").read_text() == "x"


def test_an_empty_as_is_refused_and_documented(run, api_server, kubeconfig_for):
    result = run("list", "--as", "", kubeconfig=kubeconfig_for())
    assert result.returncode == 2
    assert result.stderr.splitlines() == ["error: --as must not be empty"]
    assert api_server.requests == []
    for name in ("README.md", "docs/flags.md"):
        text = " ".join(read(name).split())
        assert re.search(r'`--as ""`.{0,80}(deliberate difference|kubectl reads an empty `--as` as not given)',
                         text), name
