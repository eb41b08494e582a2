"""Command line: the commands and flags of docs/flags.md, read as kubectl's pflag reads them; help by argparse.

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

import collections
import re

from . import __version__
from .errors import UsageError

PROG = "kubectl aicr"
DEFAULT_OPERATOR_NAMESPACE = "aicr-system"
DEFAULT_REPRODUCE_DIR = "aicr-reproduce"
MAX_REASON_CHARS = 1024
MIN_EXPIRES_SECONDS = 60
MIN_DIGEST_PREFIX = 16      # hex digits of --expect-digest, as describe shortens digests
_NAME_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789-"


def is_object_name(text):
    """True for a Kubernetes object name: an RFC 1123 subdomain (k8s.io/apimachinery validation
    IsDNS1123Subdomain), 1 to 253 characters, dot-separated labels of ``a-z``, ``0-9`` and ``-`` that start
    and end with a letter or digit. (String tests, not a regular expression: no compile at every start.)"""
    if not 1 <= len(text) <= 253:
        return False
    return all(label and label[0] != "-" and label[-1] != "-" and not label.strip(_NAME_CHARACTERS)
               for label in text.split("."))

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
    ("--all", None, "list: also show the rollouts that have ended"),
    ("--as", "USER", "username to impersonate for the command, as kubectl's --as (overrides the kubeconfig's as)"),
    ("--as-group", "GROUP", "group to impersonate; repeat it for several groups (overrides the kubeconfig's "
                            "as-groups)"),
    ("--as-uid", "UID", "UID to impersonate (overrides the kubeconfig's as-uid)"),
    ("--dry-run", "MODE",
     "approve, revoke, acknowledge: server (the API server judges the write and stores nothing), client "
     "(print what would be written, send nothing) or none (default: write)"),
    ("--expect-digest", "DIGEST",
     "approve, revoke, acknowledge: refuse unless the rollout's target plan is this desired-state digest "
     "(sha256:<64 hex>, or at least its first 16 hex digits, as describe prints them)"),
    ("--expect-uid", "UID",
     "approve, revoke, acknowledge: refuse unless the rollout's metadata.uid is this one, as describe prints it "
     "(a rollout deleted and created again under the same name has a new UID)"),
    ("--expect-assessment", "DIGEST",
     "approve, revoke, acknowledge: refuse unless the rollout's assessment report digest (spec.assessment.digest) "
     "is this one (sha256:<64 hex>, or at least its first 16 hex digits, as describe prints them)"),
    ("--release", "NAME", "acknowledge: refuse unless the rollout waits on this release; needed within 10 minutes "
     "of the rollout moving on to the release it waits on"),
    ("--allow-unverified-report", "BOOL",
     "approve: approve although the rollout's assessment report does not verify against its recorded digest "
     "(missing, unreadable, altered or malformed); default false"),
    ("--allow-clock-skew", "BOOL",
     "approve: approve although the API server's clock and this machine's differ by more than 5 minutes (the "
     "expiry is counted from the API server's clock); default false"),
)
# Flags that may stand alone, as pflag's NoOptDefVal: the bare flag means this value (``--dry-run`` alone is
# kubectl's deprecated spelling of ``--dry-run=client``). They never take the next word as their value.
BARE_FLAG_VALUES = {"--dry-run": "unchanged", "--allow-unverified-report": "true", "--allow-clock-skew": "true"}
DRY_RUN_MODES = ("none", "server", "client")
# Flags given more than once keep every value (pflag's StringArray), others keep the last.
REPEATABLE = ("--as-group",)
# Where a flag's value goes in the Invocation, when that is not the flag's name with '_' for '-'.
DESTS = {"--as": "as_user", "--as-group": "as_groups"}


def dest(flag):
    """The Invocation field of ``flag`` (``--as-uid`` -> ``as_uid``, ``--as`` -> ``as_user``)."""
    return DESTS.get(flag) or flag[2:].replace("-", "_")


def takes_value(flag):
    """True for flags written ``--flag VALUE``; False for switches such as ``--all`` and for flags that may stand
    alone (``--dry-run``), which take a value only as ``--flag=VALUE``."""
    return flag not in BARE_FLAG_VALUES and any(name == flag and metavar for name, metavar, _ in FLAGS)


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
                  "PLAN is sha256:<digest> (or its first 16+ hex digits, as describe prints it) or "
                  "aicr-plan-<16 hex>; without it, the active plan, "
                  "else the candidate. Changes nothing in the cluster."),
    "list": (None, False, "list the rollouts in progress, those that need a person first",
             "One row per rollout that has not ended (--all: every rollout). Columns: NAME; PHASE (an ended "
             "rollout's outcome follows it: Completed (Succeeded), Completed (Failed), Completed (Expired), "
             "Completed (Revoked)); "
             "APPROVAL (pending, not required, approved by USER until TIME, expired, revoked by USER, or not "
             "given for an ended rollout); WAITING ON (the release awaiting acknowledgement); DEADLINE (time "
             "left, or since it passed); AGE (since the rollout was created). Rows that need a person, an "
             "approval or an acknowledgement, come first, soonest deadline first. Needs only get and list "
             "on runtimerollouts; changes nothing in the cluster."),
    "version": (None, False, "print the plugin's version and the Python running it", ""),
    "help": ("COMMAND", False, "show help for the plugin or a command", ""),
}


Invocation = collections.namedtuple(
    "Invocation", "command name kubeconfig context operator_namespace reason expires dir "
                  "all as_user as_groups as_uid dry_run expect_digest release allow_unverified_report flag_warnings "
                  "expect_uid expect_assessment allow_clock_skew",
    defaults=(None, None, None, None, None, None, None, None, (), None, None, None))
Invocation.__doc__ = """A parsed command line (str fields; None where a flag or operand was not given).

``name`` is the ROLLOUT, PLAN or COMMAND operand; ``all`` is True or None; ``as_groups`` a
tuple of str or None. ``dry_run`` is one of :data:`DRY_RUN_MODES`; ``allow_unverified_report``
and ``allow_clock_skew`` are bools; ``flag_warnings`` the warnings about deprecated spellings."""


class HelpRequested(Exception):
    """Raised instead of exiting when help text was asked for; ``text`` is what to print."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


# The top-level usage lines (``kubectl aicr --help``), as README's Usage section shows them.
TOP_USAGES = ("COMMAND ROLLOUT [flags]", "list [--all] [flags]", "reproduce [PLAN] [flags]", "help [COMMAND]",
              "version")

USAGES = {
    "describe": "describe ROLLOUT [flags]",
    "approve": "approve ROLLOUT --reason TEXT [--expires DURATION] [--expect-digest DIGEST] "
               "[--dry-run=server|client] [flags]",
    "revoke": "revoke ROLLOUT --reason TEXT [--dry-run=server|client] [flags]",
    "acknowledge": "acknowledge ROLLOUT [--release NAME] [--dry-run=server|client] [flags]",
    "reproduce": "reproduce [PLAN] [--dir PATH] [flags]",
    "list": "list [--all] [flags]",
    "version": "version",
    "help": "help [COMMAND]",
}
# command -> [(what it does, the command line)]: the Examples section of its help. A test runs every one
# against the test API server (tests/test_help_examples.py), so they must stay true of its fixtures.
EXAMPLES = {
    "describe": [("Show a rollout as an approver decides on it", "kubectl aicr describe rollout-7953c836e83feab1-1"),
                 ("The same rollout, through another kubeconfig context",
                  "kubectl aicr describe rollout-7953c836e83feab1-1 --context carol")],
    "approve": [("Approve for two hours", "kubectl aicr approve rollout-7953c836e83feab1-1 --expires 2h "
                                          "--reason 'Maintenance window CHG-1234'"),
                ("Approve until the rollout's deadline",
                 "kubectl aicr approve rollout-7953c836e83feab1-1 --reason 'Agreed in the change board'")],
    "revoke": [("Revoke an approval before the rollout goes further",
                "kubectl aicr revoke rollout-e218ed4ca55ec015-1 --reason 'Training job not checkpointed'")],
    "acknowledge": [("Record that the post-apply steps of the awaited release are done",
                     "kubectl aicr acknowledge rollout-9b1be94d38a77b42-1")],
    "reproduce": [("Reproduce the active plan's bundle (else the candidate's)", "kubectl aicr reproduce"),
                  ("A plan by name, into a folder of your choice",
                   "kubectl aicr reproduce aicr-plan-07ed50388c1d8b9f --dir plan-active")],
    "list": [("What needs a person now", "kubectl aicr list"),
             ("Every rollout, the ended ones too", "kubectl aicr list --all"),
             ("What another user sees (needs the impersonate permission, as kubectl --as does)",
              "kubectl aicr list --context admin --as carol@example.com --as-group aicr-readers")],
    "version": [("Print the plugin's version", "kubectl aicr version")],
    "help": [("Explain list's columns", "kubectl aicr help list")],
}
HELP_WIDTH = 79  # the help's width on an 80-column terminal, and through a pipe: build.py pre-renders it
_fixed_width = None  # set while help_texts() renders the help at HELP_WIDTH, whatever the terminal
OPERAND_HELP = {"ROLLOUT": "the RuntimeRollout's name (kubectl get runtimerollouts.operator.aicr.run)",
                "PLAN": "sha256:<desired-state digest, or its first 16+ hex digits> or aicr-plan-<16 hex>",
                "COMMAND": "the command to explain"}


MAX_HELP_WIDTH = 100


def help_width(columns):
    """The help's width (columns) on a terminal ``columns`` wide: one less, at most 99, at least 20. main.py
    applies the same rule to choose the pre-rendered help."""
    return max(min(columns, MAX_HELP_WIDTH) - 1, 20)


def _shell_words(text):
    """``text`` split into shell words, a quoted word kept whole (so a line break never lands inside quotes)."""
    return re.findall(r"(?:'[^']*'|\"[^\"]*\"|[^\s'\"])+", text)


def wrap_line(line, width, indent="", usage=False):
    """One help line wrapped at word boundaries to ``width`` columns, never splitting a word.

    An example command (``kubectl aicr ...``) continues with `` \\`` so it still pastes into a shell, and an
    example's comment (``# ...``) keeps its ``# `` on every line; a
    ``name   text`` line (commands, columns) continues under its text; other lines under their start.
    """
    if len(indent) + len(line) <= width or not line.strip():
        return indent + line
    import textwrap
    lead = len(line) - len(line.lstrip())
    body = line.lstrip()
    if body.startswith(PROG + " ") and not usage:
        lines, current = [], indent + " " * lead
        for word in _shell_words(body):
            start = current.strip() == ""
            if not start and len(current) + 1 + len(word) + 2 > width:
                lines.append(current + " \\")
                current = indent + " " * (lead + 4) + word
            else:
                current += ("" if start else " ") + word
        return "\n".join(lines + [current])
    if body.startswith("# ") and not usage:
        # an example's comment: every line keeps its "# ", so the example pastes into a shell
        start = indent + " " * lead + "# "
        return "\n".join(textwrap.wrap(body[2:], width, initial_indent=start, subsequent_indent=start,
                                       break_long_words=False, break_on_hyphens=False))
    match = re.match(r"\S+(?: \S+)*?\s{2,}(?=\S)", body)
    hang = lead + len(match.group(0)) if match and lead + len(match.group(0)) <= width // 2 else lead
    if usage and PROG + " " in body:
        hang = lead + body.find(PROG + " ") + len(PROG) + 1
    # "[--expires DURATION]" stays on one line: its inner spaces are not break points
    body = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace(" ", "\x00"), body)
    if hang + max(len(unit) for unit in body.split()) > width:
        hang = lead + 4  # a narrow terminal: a shallower hanging indent rather than a line too long
    wrapped = textwrap.wrap(body, width, initial_indent=indent + " " * lead, subsequent_indent=indent + " " * hang,
                            break_long_words=False, break_on_hyphens=False)
    return "\n".join(wrapped).replace("\x00", " ")


_ARGPARSE = {}


def _argparse():
    """(argparse, the help formatter class, the parser class), made on first use: only help and ``--version``
    need argparse; a command line is read by :func:`_values` (argparse with gettext and textwrap cost every
    start ~3 ms, issue 15)."""
    if _ARGPARSE:
        return _ARGPARSE["module"], _ARGPARSE["formatter"], _ARGPARSE["parser"]
    import argparse

    class _Formatter(argparse.RawDescriptionHelpFormatter):
        """argparse's formatter for the terminal's width (``COLUMNS``, at most 100; :func:`help_width`): every line
        is wrapped at word boundaries, never inside a word or at a hyphen (``aicr-reproduce`` and resource names
        stay whole). At :data:`HELP_WIDTH` the build pre-renders it (:func:`help_texts`)."""

        def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
            if width is None and _fixed_width is None:
                import shutil
                width = help_width(shutil.get_terminal_size().columns)
            super().__init__(prog, indent_increment, max_help_position, width or _fixed_width)

        def _split_lines(self, text, width):
            import textwrap
            return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

        def _fill_text(self, text, width, indent):
            return "\n".join(wrap_line(line, width, indent) for line in text.splitlines())

        def _format_usage(self, usage, actions, groups, prefix):
            text = super()._format_usage(usage, actions, groups, prefix)
            return "\n".join(wrap_line(line, self._width, usage=True) for line in text.rstrip("\n").split("\n")) + "\n\n"


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

    _ARGPARSE.update(module=argparse, formatter=_Formatter, parser=_Parser)
    return argparse, _Formatter, _Parser


def uses_flag(command, flag):
    """True when ``command`` uses ``flag`` (FLAG_USERS; a flag not listed there is used by every command that
    talks to the cluster)."""
    if command in ("help", "version"):
        return False
    users = FLAG_USERS.get(dest(flag))
    return users is None or command in users


def _add_flags(parser, command=None):
    """Every flag on ``parser``; for a command, those it uses under ``flags:``, the others accepted but not shown
    (its help's epilog names them)."""
    argparse = _argparse()[0]
    title = "flags (every command accepts every flag)" if command is None else "flags"
    group = parser.add_argument_group(title)
    for flag, metavar, text in FLAGS:
        shown = command is None or uses_flag(command, flag)
        options = {"help": text if shown else argparse.SUPPRESS, "default": argparse.SUPPRESS,
                   "dest": dest(flag)}
        if metavar is None:
            options["action"] = "store_true"
        elif flag in BARE_FLAG_VALUES:  # written --flag=VALUE or alone (see _join_flag_values)
            options.update(metavar=metavar, nargs="?", const=BARE_FLAG_VALUES[flag])
        else:
            options["metavar"] = metavar
            if flag in REPEATABLE:
                options["action"] = "append"
        group.add_argument(flag, **options)


def _command_epilog(name):
    """The accepted-and-ignored flags, then the Examples section."""
    parts = []
    ignored = [flag for flag, _, _ in FLAGS if not uses_flag(name, flag)]
    if ignored:
        parts.append("Accepted and ignored by %s (every command accepts every flag): %s"
                     % (name, ", ".join(ignored)))
    examples = EXAMPLES.get(name)
    if examples:
        parts.append("Examples:\n" + "\n\n".join("  # %s\n  %s" % (what, line) for what, line in examples))
    return "\n\n".join(parts)


def _commands_text():
    width = max(len(name) for name in COMMANDS) + 2
    return "commands:\n" + "\n".join("  %s%s" % (name.ljust(width), summary)
                                      for name, (_, _, summary, _) in COMMANDS.items())


def _epilog():
    return "See 'kubectl aicr help COMMAND' for one command's help."


def build_parser(only=None):
    """Return the top-level argparse parser, with one subparser per command (only for ``only`` when given:
    parsing one command's line needs no other, and each subparser costs start-up time)."""
    argparse, _Formatter, _Parser = _argparse()
    parser = _Parser(
        prog=PROG, allow_abbrev=False,
        usage="\n       ".join("%(prog)s " + line for line in TOP_USAGES),
        description=(
            "Inspect, approve, revoke and acknowledge the rollouts of NVIDIA AI Cluster Runtime (AICR), and "
            "check a plan's bundle against the AICR CLI. Talks to the Kubernetes API server only. Each "
            "command's API calls share a 30-second deadline."),
        epilog=_commands_text() + "\n\n" + _epilog(), formatter_class=_Formatter)
    _add_version(parser)
    _add_flags(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser,
                                       help=argparse.SUPPRESS)
    for name, (operand, required, summary, description) in COMMANDS.items():
        if only is not None and name != only:
            continue
        sub = subparsers.add_parser(name, description=description or summary,
                                    formatter_class=_Formatter, epilog=_command_epilog(name) or None,
                                    allow_abbrev=False, prog="%s %s" % (PROG, name),
                                    usage="%s %s" % (PROG, USAGES[name]))
        if operand:
            sub.add_argument("name", metavar=operand, nargs="?", default=argparse.SUPPRESS,
                             help=OPERAND_HELP[operand])
        _add_version(sub)
        _add_flags(sub, name)
    return parser


def help_texts():
    """{"": the plugin's help, command name: that command's help}: exactly what :func:`parse` raises as
    :class:`HelpRequested` for ``--help``, ``help``, ``COMMAND --help`` and ``help COMMAND``."""
    global _fixed_width
    _fixed_width = HELP_WIDTH
    try:
        parser = build_parser()
        texts = {"": parser.format_help()}
        for name in COMMANDS:
            try:
                parser.parse_args([name, "--help"])
            except HelpRequested as shown:
                texts[name] = shown.text
    finally:
        _fixed_width = None
    return texts


def prerendered_source():
    """Python source of the module ``kubectl_aicr._prerendered`` that build.py compiles per interpreter, so
    that help needs neither argparse nor this module at run time (``main``); ``HELP`` is :func:`help_texts`,
    rendered ``WIDTH`` (:data:`HELP_WIDTH`) columns wide."""
    return ("# Generated by build.py with this interpreter's argparse: kubectl_aicr.cli.help_texts().\n"
            "WIDTH = %d\nHELP = %r\n" % (HELP_WIDTH, help_texts()))


def _add_version(parser):
    argparse = _argparse()[0]
    parser.add_argument("--version", action="store_true", default=argparse.SUPPRESS,
                        help="print the plugin's version and the Python running it")


def version_text():
    """``kubectl-aicr <version> (Python X.Y.Z)``."""
    import platform
    return "kubectl-aicr %s (Python %s)" % (__version__, platform.python_version())


# flag -> the commands that use it (flags.md); every command accepts every flag, the others say so.
FLAG_USERS = {"reason": ("approve", "revoke"), "expires": ("approve",), "dir": ("reproduce",),
              "operator_namespace": ("describe", "reproduce", "approve"), "all": ("list",),
              "dry_run": ("approve", "revoke", "acknowledge"), "expect_digest": ("approve", "revoke", "acknowledge"),
              "expect_uid": ("approve", "revoke", "acknowledge"),
              "expect_assessment": ("approve", "revoke", "acknowledge"),
              "release": ("acknowledge",), "allow_unverified_report": ("approve",),
              "allow_clock_skew": ("approve",)}


def warn_unused_flags(invocation):
    """Warn on stderr about flags the command accepts but does not use (``acknowledge --reason``)."""
    from . import output
    for key, users in FLAG_USERS.items():
        if getattr(invocation, key, None) is not None and invocation.command not in users + ("help", "version"):
            output.warning("%s %s does not use --%s; it was ignored"
                           % (PROG, invocation.command, key.replace("_", "-")))
    for text in invocation.flag_warnings:
        output.warning(text)


_FLAG_SPELLINGS = frozenset([name for name, _, _ in FLAGS] + ["-h", "--help", "--version"])


def _join_flag_values(argv):
    """``--flag value`` -> ``--flag=value``, so a value may start with '-' (``--expires -1h``), as pflag takes it."""
    valued = {flag for flag in (name for name, _, _ in FLAGS) if takes_value(flag)}
    joined, index = [], 0
    while index < len(argv):
        item = argv[index]
        if item in BARE_FLAG_VALUES:  # alone: its implied value; the next word is an operand (pflag)
            joined.append("%s=%s" % (item, BARE_FLAG_VALUES[item]))
            index += 1
        elif item in valued and index + 1 < len(argv):
            value = argv[index + 1]
            if value.partition("=")[0] in _FLAG_SPELLINGS:
                # pflag would take "--help" or "--dry-run=server" as this flag's value, and a pasted line
                # ending "--reason" followed by a flag would record that flag as the reason: refused
                raise UsageError("flag needs an argument: %s (%s is a flag; write %s=%s to mean that text)"
                                 % (item, value, item, value), hints=[_see(argv)])
            joined.append("%s=%s" % (item, value))
            index += 2
        else:
            joined.append(item)
            index += 1
    return joined


def _command_word(argv):
    """The command ``argv`` names (its first word that is not a flag, as argparse takes it), or None when
    that is not a plain command (``help``, unknown, absent): then every subparser is built."""
    for word in _join_flag_values(argv):
        if not word.startswith("-"):
            return word if word in COMMANDS and word != "help" else None
    return None


def parse(argv):
    """Parse ``argv`` (without the program name) into an :class:`Invocation`.

    Raises :class:`UsageError` for a bad command line and :class:`HelpRequested`
    (carrying the text) for ``-h``, ``--help``, ``help [COMMAND]`` or no arguments.
    """
    if not argv:
        raise HelpRequested(build_parser(None).format_help())
    if "--" in argv:
        raise UsageError("'--' is not supported: names never start with '-'")
    joined = _switches(_join_flag_values(argv))
    _check_flag_names(joined)
    _check_flag_values(joined)
    values = _values_by_argparse(argv, joined) if _asks_for_help(joined) else _values(joined)
    command = values.get("command")
    if command is None:
        raise UsageError("no command given; see 'kubectl aicr help'")
    operand, required, _, _ = COMMANDS[command]
    if required and not values.get("name"):
        raise UsageError("%s needs a %s name: kubectl aicr %s %s [flags]" % (command, operand, command, operand))
    if operand == "ROLLOUT" and not is_object_name(values["name"]):
        raise UsageError("%r is not a rollout name (a Kubernetes object name: lower-case letters, digits, '-' "
                         "and '.', at most 253 characters)" % values["name"])
    for flag, _, _ in FLAGS:
        key = dest(flag)
        given = values.get(key)
        if key != "reason" and (given == "" or (isinstance(given, list) and "" in given)):
            raise UsageError("%s must not be empty" % flag)
    if values.get("operator_namespace") is not None:
        checked_namespace(values["operator_namespace"])
    dry_run, deprecated = _dry_run(values.get("dry_run"))
    allow = values.get("allow_unverified_report")
    skew = values.get("allow_clock_skew")
    invocation = Invocation(
        command=command, name=values.get("name"), kubeconfig=values.get("kubeconfig"),
        context=values.get("context"), operator_namespace=values.get("operator_namespace"),
        reason=values.get("reason"), expires=values.get("expires"), dir=values.get("dir"),
        all=values.get("all"), as_user=values.get("as_user"),
        as_groups=tuple(values["as_groups"]) if values.get("as_groups") else None, as_uid=values.get("as_uid"),
        dry_run=dry_run, expect_digest=values.get("expect_digest"), release=values.get("release"),
        allow_unverified_report=None if allow is None else _go_bool("--allow-unverified-report", allow),
        flag_warnings=(deprecated,) if deprecated else (), expect_uid=values.get("expect_uid"),
        expect_assessment=values.get("expect_assessment"),
        allow_clock_skew=None if skew is None else _go_bool("--allow-clock-skew", skew))
    return invocation


def _asks_for_help(joined):
    """True when the joined words ask for help or the version (``-h``, ``--help``, ``--version``, the ``help``
    command): argparse answers those."""
    operands = [word for word in joined if not word.startswith("-") or word == "-"]
    return any(word in ("-h", "--help", "--version") for word in joined) or operands[:1] == ["help"]


def _values(joined):
    """{Invocation field: value} of ``joined`` (the words after :func:`_join_flag_values` and the checks of
    the flag names and values), as pflag and cobra read them: a flag anywhere, before or after the command;
    the last of a flag given twice wins, ``--as-group`` keeps each; the first operand is the command, the
    next its ROLLOUT or PLAN. UsageError for an unknown command or an operand too many."""
    values, operands = {}, []
    for word in joined:
        if word.startswith("--"):
            flag, sep, value = word.partition("=")
            value = value if sep else True  # a switch (--all); a flag needing a value was refused without one
            if flag in REPEATABLE:
                values.setdefault(dest(flag), []).append(value)
            else:
                values[dest(flag)] = value
        else:
            operands.append(word)
    if not operands:
        return values
    command, rest = operands[0], operands[1:]
    if command not in COMMANDS:
        raise _unknown_command(command)
    values["command"] = command
    if COMMANDS[command][0] and rest:
        values["name"] = rest.pop(0)
    if rest:  # kubectl's words for operands a command does not take (cmdutil.UsageErrorf, kubectl config view)
        raise UsageError("unexpected arguments: [%s]" % " ".join(rest), hints=[_see(joined)])
    return values


def _values_by_argparse(argv, joined):
    """:func:`_values` for a command line asking for help or the version: argparse raises HelpRequested with
    the text (or ``--version``'s line), as the help was rendered."""
    parser = build_parser(_command_word(argv))
    ns, extra = parser.parse_known_args(joined)
    if extra:
        raise UsageError("unexpected arguments: [%s]" % " ".join(extra), hints=[_see(joined)])
    values = vars(ns)
    if values.get("version"):
        raise HelpRequested(version_text())
    if values.get("command") == "help":
        topic = values.get("name")
        if topic is None:
            raise HelpRequested(parser.format_help())
        if topic not in COMMANDS:
            raise UsageError("unknown command %r for 'kubectl aicr help'" % topic)
        parser.parse_args([topic, "--help"])  # raises HelpRequested with the command's help
    return values


def _unknown_command(word):
    """The usage error for a command word that is none (with the closest command, as cobra suggests one)."""
    import difflib
    close = difflib.get_close_matches(word, list(COMMANDS), n=1)
    hint = "; did you mean %r?" % close[0] if close else ""
    return UsageError("unknown command %r%s (commands: %s)" % (word, hint, ", ".join(COMMANDS)))


def typed_invocation(words):
    """The connection flags among ``words`` already typed (--kubeconfig, --context, --operator-namespace,
    --as, --as-group, --as-uid) as an :class:`Invocation` of the ``__complete`` command, for shell
    completion: nothing is checked and nothing is refused."""
    values = {}
    joined = _join_flag_values(words)
    for word in joined:
        flag, sep, value = word.partition("=")
        if sep and flag.startswith("--"):
            values[flag[2:].replace("-", "_")] = value
    groups = [word.partition("=")[2] for word in joined if word.startswith("--as-group=")]
    return Invocation(command="__complete", name=None, kubeconfig=values.get("kubeconfig"),
                      context=values.get("context"), operator_namespace=values.get("operator_namespace"),
                      reason=None, expires=None, dir=None, as_user=values.get("as"),
                      as_groups=tuple(groups) or None, as_uid=values.get("as_uid"))


def _switches(argv):
    """``--all=true`` -> ``--all``, ``--all=false`` -> nothing, as pflag reads a boolean flag's value (Go's
    strconv.ParseBool spellings only); the same for ``--help``/``-h`` and ``--version``, so ``--help=true``
    asks for help, as it does of kubectl, and never runs the command."""
    switches = {flag for flag, metavar, _ in FLAGS if not metavar} | {"--help", "-h", "--version"}
    result = []
    for item in argv:
        flag, sep, value = item.partition("=")
        if sep and flag in switches:
            if _go_bool("-h, --help" if flag in ("-h", "--help") else flag, value):
                result.append(flag)
            continue
        result.append(item)
    return result


def _see(argv):
    """The last line of a usage error, as kubectl's: ``See 'kubectl aicr help describe' for usage.``"""
    command = next((word for word in argv if not word.startswith("-")), None)
    command = command if command in COMMANDS and command != "help" else None
    return "See '%s help%s' for usage." % (PROG, " " + command if command else "")


def _check_flag_values(argv):
    """A flag that takes a value given none (the last word, ``--context``): pflag's ``flag needs an argument:
    --context`` (spf13/pflag flag.go), then where the usage is. ``argv`` has its values joined."""
    for word in argv:
        if takes_value(word):
            raise UsageError("flag needs an argument: %s" % word, hints=[_see(argv)])


def _check_flag_names(argv):
    """An unknown flag is kubectl's three lines: ``error: unknown flag: --contxt``, a suggestion, where the
    usage is. ``argv`` has its values joined (``--flag=value``), so every word starting with '-' is a flag."""
    see = _see(argv)
    known = [flag for flag, _, _ in FLAGS] + ["--help", "--version"]
    for word in argv:
        if not word.startswith("-") or word == "-":
            continue
        name = word.partition("=")[0]
        if not word.startswith("--"):
            if name != "-h":
                raise UsageError("unknown shorthand flag: %r in %s" % (name[1:2], name), hints=[see])
            continue
        if name not in known:
            import difflib
            close = [flag for flag in known if flag.startswith(name)] or \
                difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hints = ["did you mean %s?" % close[0]] if close else []
            raise UsageError("unknown flag: %s" % name, hints=hints + [see])


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


MAX_DURATION_NANOSECONDS = (1 << 63) - 1  # Go's time.Duration is int64 nanoseconds: 2562047h47m16.854775807s
MAX_DURATION_SECONDS = MAX_DURATION_NANOSECONDS / 1e9
_DURATION_UNITS = {"ns": 1, "us": 1000, "\u00b5s": 1000, "\u03bcs": 1000, "ms": 1000000, "s": 1000000000,
                   "m": 60 * 1000000000, "h": 3600 * 1000000000}
_DURATION_PART = r"([0-9]*)(?:\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)"  # compiled on first use


def _leading_fraction(digits):
    """Go's leadingFraction: (digits as an integer, 10**count as float), accumulating no more once the next
    digit would overflow (src/time/format.go)."""
    value, scale = 0, 1.0
    for digit in digits:
        if value > ((1 << 63) - 1) // 10 or value * 10 + int(digit) > 1 << 63:
            break
        value, scale = value * 10 + int(digit), scale * 10
    return value, scale


def parse_duration(text):
    """A Go duration (``time.ParseDuration``: ``90m``, ``2h``, ``1h30m``, ``1.5h``, ``45s``, ``-5m``, ``0``) -> seconds.

    Computed as Go does, in integer nanoseconds (src/time/format.go: leadingInt, leadingFraction and
    the overflow checks), so the bound is exact: 2562047h47m16.854775807s is the largest, one
    nanosecond more is refused. Raises UsageError naming the value when it is not one. Units: ns,
    us (µs), ms, s, m, h; no days, no spaces, a unit on every number except a lone ``0``.
    """
    original = text
    invalid = "invalid duration %r: use a Go duration such as 2h, 90m or 1h30m" % original
    too_long = "invalid duration %r: longer than Go's largest duration (2562047h47m16.854775807s)" % original
    negative = text[:1] == "-"
    if text[:1] in ("-", "+"):
        text = text[1:]
    if text == "0":
        return 0.0
    if not text:
        raise UsageError(invalid)
    total, position = 0, 0
    while position < len(text):
        match = re.compile(_DURATION_PART).match(text, position)
        if not match or (match.group(1) == "" and not match.group(2)):
            raise UsageError(invalid)
        digits = match.group(1).lstrip("0")  # leadingInt; more than 19 digits overflow (and are past int()'s limit)
        if len(digits) > 19 or int(digits or "0") > 1 << 63:
            raise UsageError(too_long)
        whole = int(digits or "0")
        unit = _DURATION_UNITS[match.group(3)]
        if whole > (1 << 63) // unit:
            raise UsageError(too_long)
        value = whole * unit
        fraction, scale = _leading_fraction(match.group(2) or "")
        if fraction > 0:
            value += int(float(fraction) * (float(unit) / scale))
            if value > 1 << 63:
                raise UsageError(too_long)
        total += value
        if total > 1 << 63:
            raise UsageError(too_long)
        position = match.end()
    if not negative and total > MAX_DURATION_NANOSECONDS:
        raise UsageError(too_long)
    return (-total if negative else total) / 1e9


# ---------------------------------------------------------------------------------------------
# Defaults and the usage checks of flag values (each command calls those of the flags it uses)


def operator_namespace(invocation):
    """--operator-namespace, else :data:`DEFAULT_OPERATOR_NAMESPACE` (the one home of that default).
    Raises UsageError when it is not a namespace name (:func:`checked_namespace`)."""
    return checked_namespace(invocation.operator_namespace or DEFAULT_OPERATOR_NAMESPACE)


_DNS1123_LABEL = r"\A[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z"  # compiled on first use


def checked_namespace(name, flag="--operator-namespace"):
    """``name`` when it is a Kubernetes namespace name, an RFC 1123 label of at most 63 characters
    (k8s.io/apimachinery validation.IsDNS1123Label, its messages); else UsageError naming ``flag``, so
    that nothing is sent (``A B`` or ``../../..`` would change the request's path)."""
    if len(name) > 63:
        raise UsageError("invalid value \"%s\" for %s: must be no more than 63 characters" % (_safe(name), flag))
    if not re.match(_DNS1123_LABEL, name):
        raise UsageError("invalid value \"%s\" for %s: a lowercase RFC 1123 label must consist of lower case "
                         "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                         "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')" % (_safe(name), flag))
    return name


def _safe(text):
    from . import output
    return output.safe(text)


def connection_words(invocation, operator_namespace=False):
    """The flags of ``invocation`` that choose the cluster and the identity (--kubeconfig, --context, --as,
    --as-group, --as-uid; with ``operator_namespace`` also --operator-namespace), as ``--flag=value`` words, for
    a command line the plugin offers to paste: without them it would run against the shell's own kubeconfig
    and context, possibly another cluster holding a rollout of the same name."""
    words = []
    for flag, value in (("--kubeconfig", invocation.kubeconfig), ("--context", invocation.context),
                        ("--as", invocation.as_user), ("--as-uid", invocation.as_uid)):
        if value is not None:
            words.append("%s=%s" % (flag, value))
    words += ["--as-group=%s" % group for group in invocation.as_groups or ()]
    if operator_namespace and invocation.operator_namespace is not None:
        words.append("--operator-namespace=%s" % invocation.operator_namespace)
    return words


def checked_dry_run(mode):
    """--dry-run: None (not given) is "none"."""
    return mode or "none"


def digest_prefix(text):
    """A digest or its prefix as describe prints it: ``sha256:<hex>`` or ``<hex>``, 16 to 64 lowercase hex
    digits -> ``sha256:<hex>``; None when ``text`` is not one. The one parser of digest prefixes
    (--expect-digest, --expect-assessment, reproduce's PLAN)."""
    hexpart = text[len("sha256:"):] if text.startswith("sha256:") else text
    if not (MIN_DIGEST_PREFIX <= len(hexpart) <= 64) or any(c not in "0123456789abcdef" for c in hexpart):
        return None
    return "sha256:" + hexpart


def checked_expected_digest(text, flag="--expect-digest", what="a desired-state digest"):
    """--expect-digest (or ``flag``): :func:`digest_prefix` of ``text``; None when not given. UsageError
    otherwise."""
    if text is None:
        return None
    digest = digest_prefix(text)
    if digest is None:
        raise UsageError("%s %s is not %s: give sha256:<64 hex> or its first %d or more lowercase hex digits, "
                         "as kubectl aicr describe prints it" % (flag, _safe(text), what, MIN_DIGEST_PREFIX))
    return digest


def checked_expected_assessment(text):
    """--expect-assessment: as --expect-digest, for the assessment report's digest."""
    return checked_expected_digest(text, "--expect-assessment", "an assessment report digest")


def checked_expected_uid(text):
    """--expect-uid: one line of printable text (a metadata.uid), or None when not given."""
    if text is not None and _safe(text) != text:
        raise UsageError("--expect-uid must be one line of printable text")
    return text


def checked_reason(reason):
    """--reason: required, 1 to 1024 characters (operator-api.md rule 1), one line of printable text
    (it is stored for good and shown by other tools). UsageError otherwise."""
    if reason is None:
        raise UsageError("--reason TEXT is required")
    if not reason:
        raise UsageError("--reason must not be empty")
    if not reason.strip():
        raise UsageError("--reason must not be blank")
    if len(reason) > MAX_REASON_CHARS:
        raise UsageError("--reason is %d characters; at most %d are allowed" % (len(reason), MAX_REASON_CHARS))
    if _safe(reason) != reason:
        raise UsageError("--reason must be one line of printable text (it holds %s)" % _safe(
            next(c for c in reason if _safe(c) != c)))
    return reason


def checked_expires(expires):
    """--expires: a non-negative Go duration in seconds, or None when not given. UsageError otherwise."""
    if expires is None:
        return None
    seconds = parse_duration(expires)
    if seconds < 0:
        raise UsageError("--expires %s is negative; an approval cannot end in the past" % expires)
    if seconds < MIN_EXPIRES_SECONDS:
        raise UsageError("--expires %s would end the approval almost at once; give at least 1m (an approval "
                         "can be neither changed nor extended)" % expires)
    return seconds
