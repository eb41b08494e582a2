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
    """(A value that is one of the plugin's own flag names is refused instead: see below.)"""
    inv = cli.parse(["approve", "r", "--expires", "-1h", "--reason", "--versions differ"])
    assert inv.expires == "-1h" and inv.reason == "--versions differ"


# -- the hand parser (cli._values) against argparse on the same words ---------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

_WORDS = st.sampled_from(["describe", "approve", "list", "version", "reproduce", "acknowledge", "bogus", "r",
                          "x", "-", "", "--kubeconfig=k", "--context=c", "--context=", "--all", "--dry-run=server",
                          "--as=u", "--as-group=g", "--as-group=h", "--reason=a=b", "--expires=-1h",
                          "--operator-namespace=ns", "--allow-unverified-report=true", "--release=rel"])


def _by_argparse(joined):
    try:
        return ("ok", {k: v for k, v in cli._values_by_argparse(joined, joined).items() if v is not None})
    except UsageError as exc:
        return ("usage", str(exc))


def _by_hand(joined):
    try:
        return ("ok", cli._values(joined))
    except UsageError as exc:
        return ("usage", str(exc))


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(_WORDS, max_size=7))
def test_the_hand_parser_reads_every_command_line_as_argparse_does(words):
    """Outside help, a command line is read without argparse (start-up time); argparse, which renders the
    help, is the reference: same values, same usage errors. One deliberate difference: a repeated
    --as-group on both sides of the command word keeps every group (pflag's StringArray; argparse 3.9+ keeps
    only those after the command)."""
    groups = [i for i, w in enumerate(words) if w.startswith("--as-group")]
    command_at = next((i for i, w in enumerate(words) if not w.startswith("--")), len(words))
    if groups and groups[0] < command_at < groups[-1]:
        return
    assert _by_hand(list(words)) == _by_argparse(list(words))


def test_as_group_on_both_sides_of_the_command_keeps_every_group():
    inv = cli.parse(["--as", "u", "--as-group", "a", "describe", "r", "--as-group", "b"])
    assert inv.as_groups == ("a", "b")


@pytest.mark.parametrize("name,ok", [("a", True), ("a-b.c9", True), ("-a", False), ("a-", False), ("a..b", False),
                                     ("A", False), ("a" * 253, True), ("a" * 254, False), ("", False),
                                     ("a.b-", False), ("a\n", False), ("é", False), (".a", False)])
def test_rollout_names_are_rfc_1123_subdomains(name, ok):
    assert cli.is_object_name(name) is ok


@pytest.mark.parametrize("word", ["--help=true", "--help=1", "--help=T", "-h=true", "--help=TRUE"])
def test_help_given_a_true_value_is_help_and_never_runs_the_command(word):
    """pflag reads --help as a boolean: --help=true asks for help (a write must never run instead)."""
    with pytest.raises(cli.HelpRequested) as shown:
        cli.parse(["approve", "r", "--reason", "x", word])
    assert shown.value.text.startswith("usage: kubectl aicr approve ROLLOUT")


def test_version_given_a_true_value_is_the_version():
    with pytest.raises(cli.HelpRequested) as shown:
        cli.parse(["describe", "r", "--version=true"])
    assert shown.value.text.startswith("kubectl-aicr ")


@pytest.mark.parametrize("argv, flag", [(["describe", "r", "--help=x"], "-h, --help"),
                                        (["describe", "r", "-h=yes"], "-h, --help"),
                                        (["list", "--all=tRuE"], "--all"), (["list", "--all=on"], "--all")])
def test_a_boolean_flag_takes_only_go_parsebool_spellings(argv, flag):
    with pytest.raises(UsageError) as refused:
        cli.parse(argv)
    assert str(refused.value).startswith('invalid argument "') and 'for "%s" flag: strconv.ParseBool' % flag in str(
        refused.value)


def test_help_or_all_given_false_is_not_given():
    assert cli.parse(["describe", "r", "--help=false"]).command == "describe"
    assert cli.parse(["list", "--all=0"]).all is None and cli.parse(["list", "--all=TRUE"]).all is True


@pytest.mark.parametrize("value", ["--help", "-h", "--dry-run=server", "--dry-run", "--all", "--context=x",
                                   "--version"])
def test_a_flag_is_never_taken_as_the_value_of_the_flag_before_it(value):
    """A pasted decision line ends with --reason: whatever flag is typed after it must not become the reason
    (pflag would take it), or a write would be recorded with the reason "--help"."""
    with pytest.raises(UsageError) as refused:
        cli.parse(["approve", "r", "--reason", value])
    assert str(refused.value).startswith("flag needs an argument: --reason (%s is a flag; write --reason=" % value)


def test_a_value_that_only_looks_like_a_flag_is_still_a_value():
    assert cli.parse(["approve", "r", "--reason", "--not-a-flag"]).reason == "--not-a-flag"
    assert cli.parse(["approve", "r", "--reason=--help"]).reason == "--help"
    assert cli.parse(["approve", "r", "--reason", "x", "--expires", "-1h"]).expires == "-1h"
