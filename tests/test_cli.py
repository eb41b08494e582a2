"""The command line (kubectl_aicr.cli): flags anywhere, both forms, help everywhere, one-line errors."""

import pytest

from kubectl_aicr import cli
from kubectl_aicr.errors import UsageError

COMMANDS = ["describe", "approve", "revoke", "acknowledge", "reproduce"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_every_flag_before_and_after_in_both_forms(command):
    values = {"--kubeconfig": "/k", "--context": "c", "--operator-namespace": "ns", "--reason": "why",
              "--expires": "2h", "--dir": "d"}
    before = [part for flag, value in values.items() for part in (flag, value)]
    after = ["%s=%s" % item for item in values.items()]
    for argv in (before + [command, "x"], [command, "x"] + after, [command] + after[:3] + ["x"] + before[6:]):
        inv = cli.parse(argv)
        assert inv.command == command and inv.name == "x"
        assert (inv.kubeconfig, inv.context, inv.operator_namespace) == ("/k", "c", "ns")
        assert (inv.reason, inv.expires, inv.dir) == ("why", "2h", "d")


def test_flag_after_the_name_wins_over_the_same_flag_before_it():
    inv = cli.parse(["--context", "a", "describe", "r", "--context=b"])
    assert inv.context == "b"


def test_unset_flags_are_none():
    inv = cli.parse(["describe", "r"])
    assert inv.kubeconfig is None and inv.context is None and inv.reason is None


def test_reproduce_plan_is_optional():
    assert cli.parse(["reproduce"]).name is None
    assert cli.parse(["reproduce", "sha256:ab"]).name == "sha256:ab"


@pytest.mark.parametrize("argv", [[], ["-h"], ["--help"], ["help"], ["describe", "-h"], ["approve", "--help"],
                                  ["help", "revoke"], ["reproduce", "x", "--help"]])
def test_help_is_text_not_an_exit(argv):
    with pytest.raises(cli.HelpRequested) as shown:
        cli.parse(argv)
    assert "usage: kubectl aicr" in shown.value.text


def test_command_help_names_the_command_and_every_flag():
    with pytest.raises(cli.HelpRequested) as shown:
        cli.parse(["help", "approve"])
    text = shown.value.text
    assert "kubectl aicr approve" in text
    for flag, _, _ in cli.FLAGS:
        assert flag in text


def test_version_flag():
    with pytest.raises(cli.HelpRequested) as shown:
        cli.parse(["--version"])
    assert shown.value.text.startswith("kubectl-aicr ")


@pytest.mark.parametrize("argv,words", [
    (["describe"], "describe needs a ROLLOUT name"),
    (["bogus"], "unknown command 'bogus'"),
    (["descibe", "x"], "did you mean 'describe'?"),
    (["describe", "r", "--kube", "x"], "unknown flag: --kube"),
    (["describe", "r", "--context"], "flag needs an argument: --context"),
    (["describe", "r", "--dir="], "--dir must not be empty"),
    (["help", "bogus"], "unknown command 'bogus'"),
    (["describe", "r", "--", "x"], "'--' is not supported"),
])
def test_usage_errors_are_one_line(argv, words):
    with pytest.raises(UsageError) as raised:
        cli.parse(argv)
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)
    assert raised.value.exit_code == 2


@pytest.mark.parametrize("text,seconds", [("90m", 5400), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400),
                                          ("45s", 45), ("0", 0), ("-5m", -300), ("+1m", 60), ("300ms", 0.3),
                                          ("1h0.5m", 3630), (".5h", 1800), ("2h45m30s", 9930)])
def test_go_durations(text, seconds):
    assert cli.parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "2", "1d", "h", "1 h", "1h ", "1.h.5", "-", ".h", "2H", "1e3s", "１h"])
def test_malformed_durations_are_refused(text):
    with pytest.raises(UsageError) as raised:
        cli.parse_duration(text)
    assert "invalid duration" in str(raised.value)


def test_a_value_may_start_with_a_dash_as_pflag_takes_it():
    inv = cli.parse(["approve", "r", "--expires", "-1h", "--reason", "--version"])
    assert inv.expires == "-1h" and inv.reason == "--version"
