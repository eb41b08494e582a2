"""Command line: the commands and flags of ../shared/spec/flags.md, parsed with argparse.

Conventions (the plugin page and kubectl's own flag handling, spf13/pflag):

- Every command accepts every flag, before or after the command name, as
  ``--flag value`` or ``--flag=value``. Flags are never abbreviated (pflag has no
  prefix matching), so ``--kube`` is an unknown flag, not ``--kubeconfig``.
- ``help`` or ``-h``/``--help``, alone or after any command, prints help and exits 0;
  ``--version`` prints the version.
- A usage error is one line on stderr, ``error: <what>``, with exit status 2
  (raised as :class:`~kubectl_aicr.errors.UsageError`, printed by ``main``).

The result of :func:`parse` is an :class:`Invocation`; ``None`` fields mean
"flag not given", so callers apply the documented defaults themselves.
"""

import argparse
import collections
import re
import textwrap

from . import __version__
from .errors import UsageError

PROG = "kubectl aicr"
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"
DEFAULT_REPRODUCE_DIR = "aicr-reproduce"
MAX_REASON_CHARS = 1024
# A Kubernetes object name (RFC 1123 subdomain, k8s.io/apimachinery validation.IsDNS1123Subdomain).
_OBJECT_NAME = re.compile(r"\A(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")

# (flag, metavar, help). Every command takes every one of these.
FLAGS = (
    ("--kubeconfig", "PATH", "kubeconfig file(s); default $KUBECONFIG, then ~/.kube/config"),
    ("--context", "NAME", "kubeconfig context to use; default the current context"),
    ("--operator-namespace", "NAME",
     "namespace of the AICR operator, where plans and assessment reports live (default %s)"
     % DEFAULT_OPERATOR_NAMESPACE),
    ("--reason", "TEXT", "approve, revoke: why (required, 1 to %d characters)" % MAX_REASON_CHARS),
    ("--expires", "DURATION",
     "approve: how long the approval stays valid, a Go duration such as 2h or 1h30m "
     "(default: until the rollout's deadline)"),
    ("--dir", "PATH", "reproduce: where the recipe is written (default %s)" % DEFAULT_REPRODUCE_DIR),
    ("--dry-run", "MODE",
     "approve, revoke, acknowledge: server (the API server judges the write and stores nothing), client "
     "(print what would be written, send nothing) or none (default: write)"),
    ("--expect-digest", "DIGEST",
     "approve, revoke, acknowledge: refuse unless the rollout's target plan is this desired-state digest "
     "(sha256:<64 hex>, or at least its first 16 hex digits, as describe prints them)"),
    ("--release", "NAME", "acknowledge: refuse unless the rollout waits on this release"),
    ("--allow-unverified-report", "BOOL",
     "approve: approve although the rollout's assessment report does not verify against its recorded digest "
     "(missing, unreadable, altered or malformed); default false"),
)
# Flags that may stand alone, as pflag's NoOptDefVal: the bare flag means this value (``--dry-run`` alone is
# kubectl's deprecated spelling of ``--dry-run=client``). They never take the next word as their value.
BARE_FLAG_VALUES = {"--dry-run": "unchanged", "--allow-unverified-report": "true"}
DRY_RUN_MODES = ("none", "server", "client")

# name -> (positional metavar or None, positional required?, one-line summary, description)
COMMANDS = {
    "describe": ("ROLLOUT", True, "show a rollout as an approver decides on it",
                 "Prints the rollout, its transition, phase, outcome, deadline, approval, "
                 "every step, AICR's upgrade-check report (verified against its recorded digest), "
                 "the transition records and the acknowledgements."),
    "approve": ("ROLLOUT", True, "approve a rollout, as you, until --expires or its deadline",
                "Sets the rollout's spec.approval to your username (asked of the API server), "
                "the expiry and --reason. An approval can be neither changed nor extended."),
    "revoke": ("ROLLOUT", True, "revoke an approved rollout",
               "Records your username, the time and --reason as the rollout's revocation."),
    "acknowledge": ("ROLLOUT", True, "record that the post-apply steps of the awaited release are done",
                    "For a rollout in AwaitingAcknowledgement: records, as you, that the post-apply "
                    "steps of the release it waits on are done."),
    "reproduce": ("PLAN", False, "write a plan's recipe and print the commands that reproduce its bundle",
                  "PLAN is sha256:<digest> or aicr-plan-<16 hex>; without it, the active plan, "
                  "else the candidate. Changes nothing in the cluster."),
    "version": (None, False, "print the plugin's version and the Python running it", ""),
    "help": ("COMMAND", False, "show help for the plugin or a command", ""),
}


Invocation = collections.namedtuple(
    "Invocation", "command name kubeconfig context operator_namespace reason expires dir dry_run expect_digest "
    "release allow_unverified_report flag_warnings", defaults=(None, None, None, None, ()))
Invocation.__doc__ = """A parsed command line (str fields; None where a flag or operand was not given).

``name`` is the ROLLOUT, PLAN or COMMAND operand. ``dry_run`` is one of :data:`DRY_RUN_MODES`;
``allow_unverified_report`` is a bool; ``flag_warnings`` the warnings about deprecated spellings."""


class HelpRequested(Exception):
    """Raised instead of exiting when help text was asked for; ``text`` is what to print."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


USAGES = {
    "describe": "describe ROLLOUT [flags]",
    "approve": "approve ROLLOUT --reason TEXT [--expires DURATION] [--expect-digest DIGEST] "
               "[--dry-run=server|client] [flags]",
    "revoke": "revoke ROLLOUT --reason TEXT [--dry-run=server|client] [flags]",
    "acknowledge": "acknowledge ROLLOUT [--release NAME] [--dry-run=server|client] [flags]",
    "reproduce": "reproduce [PLAN] [--dir PATH] [flags]",
    "version": "version",
    "help": "help [COMMAND]",
}
OPERAND_HELP = {"ROLLOUT": "the RuntimeRollout's name (kubectl get runtimerollouts.operator.aicr.run)",
                "PLAN": "sha256:<desired-state digest> or aicr-plan-<16 hex>",
                "COMMAND": "the command to explain"}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, but never breaking a line at a hyphen (``aicr-reproduce`` stays whole)."""

    def _split_lines(self, text, width):
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of printing and exiting."""

    def error(self, message):
        import re as _re
        match = _re.match(r"argument COMMAND: invalid choice: '(.*)' \(choose from", message)
        if match:
            import difflib
            close = difflib.get_close_matches(match.group(1), list(COMMANDS), n=1)
            hint = "; did you mean %r?" % close[0] if close else ""
            raise UsageError("unknown command %r%s (commands: %s)" % (match.group(1), hint, ", ".join(COMMANDS)))
        raise UsageError(message)

    def exit(self, status=0, message=None):
        if status:
            raise UsageError((message or "").strip() or "bad arguments")
        raise HelpRequested(message or "")

    def print_help(self, file=None):
        raise HelpRequested(self.format_help())


def _add_flags(parser):
    group = parser.add_argument_group("flags (every command accepts every flag)")
    for flag, metavar, text in FLAGS:
        if flag in BARE_FLAG_VALUES:  # written --flag=VALUE or alone (see _join_flag_values)
            group.add_argument(flag, metavar=metavar, help=text, default=argparse.SUPPRESS, nargs="?",
                               const=BARE_FLAG_VALUES[flag])
        else:
            group.add_argument(flag, metavar=metavar, help=text, default=argparse.SUPPRESS)


def _commands_text():
    width = max(len(name) for name in COMMANDS) + 2
    return "commands:\n" + "\n".join("  %s%s" % (name.ljust(width), summary)
                                      for name, (_, _, summary, _) in COMMANDS.items())


def _epilog():
    return "See 'kubectl aicr help COMMAND' for one command's help."


def build_parser():
    """Return the top-level argparse parser, with one subparser per command."""
    parser = _Parser(
        prog=PROG, allow_abbrev=False,
        usage="%(prog)s COMMAND ROLLOUT [flags]\n       %(prog)s reproduce [PLAN] [flags]\n"
              "       %(prog)s help [COMMAND]",
        description=textwrap.fill(
            "Inspect, approve, revoke and acknowledge the rollouts of NVIDIA AI Cluster Runtime (AICR), and "
            "check a plan's bundle against the AICR CLI. Talks to the Kubernetes API server only. Each "
            "command's API calls share a 30-second deadline.", 79),
        epilog=_commands_text() + "\n\n" + _epilog(), formatter_class=_Formatter)
    _add_version(parser)
    _add_flags(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                       help=argparse.SUPPRESS)
    for name, (operand, required, summary, description) in COMMANDS.items():
        sub = subparsers.add_parser(name, description=textwrap.fill(description or summary, 79),
                                    formatter_class=_Formatter,
                                    allow_abbrev=False, prog="%s %s" % (PROG, name),
                                    usage="%s %s" % (PROG, USAGES[name]))
        if operand:
            sub.add_argument("name", metavar=operand, nargs="?", default=argparse.SUPPRESS,
                             help=OPERAND_HELP[operand])
        _add_version(sub)
        _add_flags(sub)
    return parser


def _add_version(parser):
    parser.add_argument("--version", action="store_true", default=argparse.SUPPRESS,
                        help="print the plugin's version and the Python running it")


def version_text():
    """``kubectl-aicr <version> (Python X.Y.Z)``."""
    import platform
    return "kubectl-aicr %s (Python %s)" % (__version__, platform.python_version())


# flag -> the commands that use it (flags.md); every command accepts every flag, the others say so.
FLAG_USERS = {"reason": ("approve", "revoke"), "expires": ("approve",), "dir": ("reproduce",),
              "operator_namespace": ("describe", "reproduce", "approve"),
              "dry_run": ("approve", "revoke", "acknowledge"), "expect_digest": ("approve", "revoke", "acknowledge"),
              "release": ("acknowledge",), "allow_unverified_report": ("approve",)}


def warn_unused_flags(invocation):
    """Warn on stderr about flags the command accepts but does not use (``acknowledge --reason``)."""
    from . import output
    for key, users in FLAG_USERS.items():
        if getattr(invocation, key) is not None and invocation.command not in users + ("help", "version"):
            output.warning("%s %s does not use --%s; it was ignored"
                           % (PROG, invocation.command, key.replace("_", "-")))
    for text in invocation.flag_warnings:
        output.warning(text)


def _join_flag_values(argv):
    """``--flag value`` -> ``--flag=value``, so a value may start with '-' (``--expires -1h``), as pflag takes it."""
    takes_value = {flag for flag, _, _ in FLAGS} - set(BARE_FLAG_VALUES)
    joined, index = [], 0
    while index < len(argv):
        item = argv[index]
        if item in BARE_FLAG_VALUES:  # alone: its implied value; the next word is an operand (pflag)
            joined.append("%s=%s" % (item, BARE_FLAG_VALUES[item]))
            index += 1
        elif item in takes_value and index + 1 < len(argv):
            joined.append("%s=%s" % (item, argv[index + 1]))
            index += 2
        else:
            joined.append(item)
            index += 1
    return joined


def parse(argv):
    """Parse ``argv`` (without the program name) into an :class:`Invocation`.

    Raises :class:`UsageError` for a bad command line and :class:`HelpRequested`
    (carrying the text) for ``-h``, ``--help``, ``help [COMMAND]`` or no arguments.
    """
    parser = build_parser()
    if not argv:
        raise HelpRequested(parser.format_help())
    if "--" in argv:
        raise UsageError("'--' is not supported: names never start with '-'")
    ns = parser.parse_args(_join_flag_values(argv))
    values = vars(ns)
    command = values.get("command")
    if values.get("version"):
        raise HelpRequested(version_text())
    if command is None:
        raise UsageError("no command given; see 'kubectl aicr help'")
    if command == "help":
        topic = values.get("name")
        if topic is None:
            raise HelpRequested(parser.format_help())
        if topic not in COMMANDS:
            raise UsageError("unknown command %r for 'kubectl aicr help'" % topic)
        try:
            parser.parse_args([topic, "--help"])
        except HelpRequested as shown:
            raise shown
    operand, required, _, _ = COMMANDS[command]
    if required and not values.get("name"):
        raise UsageError("%s needs a %s name: kubectl aicr %s %s [flags]" % (command, operand, command, operand))
    if operand == "ROLLOUT" and not _OBJECT_NAME.match(values["name"]):
        raise UsageError("%r is not a rollout name (a Kubernetes object name: lower-case letters, digits, '-' "
                         "and '.', at most 253 characters)" % values["name"])
    for flag, _, _ in FLAGS:
        key = flag[2:].replace("-", "_")
        if key in values and values[key] == "" and key not in ("reason",):
            raise UsageError("%s must not be empty" % flag)
    dry_run, deprecated = _dry_run(values.get("dry_run"))
    allow = values.get("allow_unverified_report")
    invocation = Invocation(
        command=command, name=values.get("name"), kubeconfig=values.get("kubeconfig"),
        context=values.get("context"), operator_namespace=values.get("operator_namespace"),
        reason=values.get("reason"), expires=values.get("expires"), dir=values.get("dir"),
        dry_run=dry_run, expect_digest=values.get("expect_digest"), release=values.get("release"),
        allow_unverified_report=None if allow is None else _go_bool("--allow-unverified-report", allow),
        flag_warnings=(deprecated,) if deprecated else ())
    return invocation

_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _go_bool(flag, text):
    """A pflag boolean value (Go's strconv.ParseBool) -> bool; UsageError in pflag's words otherwise."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise UsageError('invalid argument "%s" for "%s" flag: strconv.ParseBool: parsing "%s": invalid syntax'
                     % (text, flag, text))


def _dry_run(text):
    """--dry-run as kubectl reads it (k8s.io/kubectl cmd/util GetDryRunStrategy) -> (mode or None, deprecation
    warning or None): server, client or none; alone, or a boolean, is the deprecated spelling of client/none."""
    if text is None:
        return None, None
    if text in _GO_TRUE + _GO_FALSE:
        mode = "client" if _go_bool("--dry-run", text) else "none"
        return mode, "--dry-run=%s is deprecated (boolean value) and can be replaced with --dry-run=%s." % (
            text, mode)
    if text == BARE_FLAG_VALUES["--dry-run"]:
        return "client", "--dry-run is deprecated and can be replaced with --dry-run=client."
    if text not in DRY_RUN_MODES:
        raise UsageError('Invalid dry-run value (%s). Must be "none", "server", or "client".' % text)
    return text, None


MAX_DURATION_SECONDS = 9223372036.854775807  # Go's time.Duration is int64 nanoseconds: about 2562047h
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
                   "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")


def parse_duration(text):
    """A Go duration (``time.ParseDuration``: ``90m``, ``2h``, ``1h30m``, ``1.5h``, ``45s``, ``-5m``, ``0``) -> seconds.

    Raises UsageError naming the value when it is not one. Units: ns, us (µs), ms, s, m, h;
    no days, no spaces, a unit on every number except a lone ``0``.
    """
    original = text
    invalid = "invalid duration %r: use a Go duration such as 2h, 90m or 1h30m" % original
    sign = 1.0
    if text[:1] in ("-", "+"):
        sign, text = (-1.0 if text[0] == "-" else 1.0), text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise UsageError(invalid)
    total, position = 0.0, 0
    while position < len(text):
        match = _DURATION_PART.match(text, position)
        if not match or match.group(1) in ("", "."):
            raise UsageError(invalid)
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if total > MAX_DURATION_SECONDS:
        raise UsageError("invalid duration %r: longer than Go's largest duration (2562047h)" % original)
    return sign * total
