"""Help and messages as kubectl users expect them: examples (each one run here), the flags a command uses first,
word-boundary wrapping on narrow terminals, kubectl's unknown-flag message."""

import re
import shlex
import subprocess

import pytest

from kubectl_aicr import cli

pytestmark = pytest.mark.e2e

COMMANDS = [name for name in cli.COMMANDS]


def help_text(run, command, columns=None):
    env = {"COLUMNS": str(columns)} if columns else None
    result = run("help", command, env=env)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    return result.stdout


def examples(text):
    """The command lines of a help text's Examples section, continuation lines (`` \\``) joined."""
    section = text.split("\nExamples:\n", 1)[1]
    commands, current = [], None
    for line in section.split("\n"):
        stripped = line.strip()
        if current is not None:
            current += " " + stripped.rstrip("\\").strip()
            if not stripped.endswith("\\"):
                commands.append(current)
                current = None
        elif stripped.startswith("kubectl aicr "):
            if stripped.endswith("\\"):
                current = stripped.rstrip("\\").strip()
            else:
                commands.append(stripped)
    return commands


@pytest.mark.parametrize("command", COMMANDS)
def test_every_example_in_the_help_runs(run, api_server, tmp_path, command):
    kubeconfig = api_server.write_kubeconfig_all(str(tmp_path / "kubeconfig"))
    lines = examples(help_text(run, command, columns=40))  # the narrow form, continuation lines and all
    assert lines and lines == [line for _, line in cli.EXAMPLES[command]]
    snapshot = api_server.snapshot()
    for index, line in enumerate(lines):
        api_server.restore(snapshot)
        argv = shlex.split(line)
        assert argv[:2] == ["kubectl", "aicr"]
        cwd = tmp_path / ("example-%d" % index)
        cwd.mkdir()
        result = run(*argv[2:], kubeconfig=kubeconfig, cwd=str(cwd))
        assert result.returncode == 0, "%s\n%s%s" % (line, result.stdout, result.stderr)
        assert "warning:" not in result.stderr, line  # examples use only the flags their command uses


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("columns", [30, 40, 80])
def test_help_wraps_at_word_boundaries(run, command, columns):
    wide = help_text(run, command, columns=200)
    narrow = help_text(run, command, columns=columns)
    for line in narrow.splitlines():
        # longer only when it is one word that cannot be split (with an example's continuation mark)
        unit = line.strip().rstrip("\\").strip()
        one_word = " " not in unit or re.fullmatch(r"'[^']*'", unit)  # a quoted shell word is one word
        one_word = one_word or re.fullmatch(r"--[a-z-]+ \[?[A-Z]+\]?", unit)  # a flag and its value, as argparse shows it
        assert len(line) <= columns or one_word, "over %d columns: %r" % (columns, line)
    # the same words in the same order: nothing split mid-word (a lone "\" is an example's continuation)
    # (nor a "#", which starts each line of an example's wrapped comment)
    words = lambda text: [w for w in text.split() if w not in ("\\", "#")]  # noqa: E731
    assert words(narrow) == words(wide)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("columns", [30, 40, 80, 200])
def test_every_example_line_pastes_into_a_shell(run, tmp_path, command, columns):
    """Each line of Examples is a comment starting with "#" or a command (or its `` \\`` continuation), as
    kubectl's examples are: the whole section pasted into bash runs exactly the examples' commands."""
    section = help_text(run, command, columns=columns).split("\nExamples:\n", 1)[1]
    continued = False
    for line in section.splitlines():
        stripped = line.strip()
        if stripped:
            assert continued or stripped.startswith(("# ", "kubectl aicr ")), "%d columns: %r" % (columns, line)
        continued = stripped.endswith("\\")
    script = "kubectl() { printf '%s\\0' \"$@\"; printf '\\n'; }\n" + section
    pasted = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert pasted.returncode == 0 and pasted.stderr == "", pasted.stderr
    ran = [line.rstrip("\0").split("\0") for line in pasted.stdout.splitlines()]
    assert ran == [shlex.split(line)[1:] for _, line in cli.EXAMPLES[command]]


@pytest.mark.parametrize("command", ["describe", "approve", "revoke", "acknowledge", "reproduce", "list"])
def test_a_command_shows_the_flags_it_uses_and_names_the_others(run, command):
    text = help_text(run, command)
    flags_section = text.split("\nflags:\n", 1)[1].split("\n\n", 1)[0]
    shown = re.findall(r"^  (--[a-z-]+)", flags_section, re.M)
    used = [flag for flag, _, _ in cli.FLAGS if cli.uses_flag(command, flag)]
    assert shown == used and "--kubeconfig" in shown and "--as" in shown
    ignored = [flag for flag, _, _ in cli.FLAGS if flag not in used]
    assert ("Accepted and ignored by %s (every command accepts every flag): %s" % (command, ", ".join(ignored))
            in " ".join(text.split()))
    assert "\nExamples:\n" in text
    assert {"list": "--all", "approve": "--expires", "reproduce": "--dir"}.get(command, "--context") in shown


def test_help_list_explains_every_column(run):
    text = " ".join(help_text(run, "list").split())
    for column in ("NAME", "PHASE", "APPROVAL", "WAITING ON", "DEADLINE", "AGE"):
        assert column in text
    for state in ("pending", "not required", "approved by USER until TIME", "expired", "revoked by USER"):
        assert state in text


@pytest.mark.parametrize("argv,lines", [
    (["describe", "r", "--contxt", "x"],
     ["error: unknown flag: --contxt", "did you mean --context?", "See 'kubectl aicr help describe' for usage."]),
    (["--contxt=x", "approve", "r"],
     ["error: unknown flag: --contxt", "did you mean --context?", "See 'kubectl aicr help approve' for usage."]),
    (["list", "--everything"], ["error: unknown flag: --everything", "See 'kubectl aicr help list' for usage."]),
    (["--al"], ["error: unknown flag: --al", "did you mean --all?", "See 'kubectl aicr help' for usage."]),
    (["list", "-A"], ["error: unknown shorthand flag: 'A' in -A", "See 'kubectl aicr help list' for usage."]),
])
def test_unknown_flags_read_like_kubectl(run, argv, lines):
    result = run(*argv)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == lines


def test_boolean_flag_values_as_pflag_reads_them():
    assert cli.parse(["list", "--all"]).all is True
    assert cli.parse(["list", "--all=true"]).all is True
    assert cli.parse(["list", "--all=false"]).all is None
    assert cli.parse(["--all", "list"]).all is True
    with pytest.raises(cli.UsageError):
        cli.parse(["list", "--all=maybe"])


def test_a_switch_takes_no_value_so_the_next_word_is_the_operand():
    inv = cli.parse(["describe", "--all", "r"])
    assert inv.name == "r" and inv.all is True


def test_impersonation_flags_parse_as_kubectl_takes_them():
    inv = cli.parse(["approve", "r", "--as", "alice", "--as-group", "g1", "--as-group=g2", "--as-uid", "7"])
    assert (inv.as_user, inv.as_groups, inv.as_uid) == ("alice", ("g1", "g2"), "7")
    assert cli.parse(["list"]).as_groups is None
    with pytest.raises(cli.UsageError):
        cli.parse(["list", "--as-group="])
