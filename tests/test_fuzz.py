"""Fuzzing with hypothesis: the YAML reader on arbitrary text and the argument parser on arbitrary argv
give a value or one clear error, never a traceback."""

import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kubectl_aicr import cli, main, yamlreader
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
        # What the user sees: exactly one line, `error: ...`, exit status 2, whatever the argv held.
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            assert main.main(list(argv)) == 2
        assert stderr.getvalue().startswith("error: ") and stderr.getvalue().count("\n") == 1
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
