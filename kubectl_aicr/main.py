"""The entry point: parse the command line, run one command, print errors as one ``error:`` line.

Exit status: 0 success (approve, revoke, acknowledge: the decision was recorded, also when its confirmation
could not be printed or the command was interrupted after it was stored, which stderr then says); 1 an error
(kubeconfig, credentials, transport, an API error, a refusal); 2 a usage error; 3 content that failed
verification (a report or recipe that does not match its recorded digest); 4 a write whose outcome is unknown
(errors.UnknownOutcome: it may have been recorded); 130 interrupted (Ctrl-C), 128 + the signal for SIGTERM
and SIGHUP (helpers.Terminated); 70 an internal error (a bug: reported without a traceback).
"""

import os
import sys

from .errors import AicrError

EXIT_INTERNAL = 70


def _prerendered_help(argv):
    """The help text for ``argv`` when it only asks for help (``[]``, ``--help``, ``help``, ``COMMAND --help``,
    ``help COMMAND``) and the build pre-rendered it for this Python (kubectl_aicr._prerendered, made by
    build.py from cli.help_texts()); else None, and cli parses as usual. Spares argparse on every Tab press."""
    if argv in ([], ["-h"], ["--help"], ["help"]):
        key = ""
    elif len(argv) == 2 and argv[0] == "help" and argv[1] not in ("", "-h", "--help"):
        key = argv[1]
    elif len(argv) == 2 and argv[1] in ("-h", "--help") and argv[0] not in ("", "-h", "--help"):
        key = argv[0]
    else:
        return None
    try:
        from ._prerendered import HELP, WIDTH
    except ImportError:  # running from source: argparse renders it
        return None
    if max(min(_terminal_columns(), 100) - 1, 20) != WIDTH:  # cli.help_width: another width, argparse renders it
        return None
    return HELP.get(key)


def _terminal_columns():
    """``shutil.get_terminal_size().columns`` without importing shutil: COLUMNS, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
        if columns > 0:
            return columns
    except ValueError:
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _command(name):
    """The ``run`` of a command of :data:`cli.COMMANDS` (the one table of commands): the module of that name
    under :mod:`kubectl_aicr.commands`, loaded only for the command that runs (``help`` never gets here:
    cli.parse answers it)."""
    import importlib
    return importlib.import_module("%s.commands.%s" % (__package__, name)).run


def main(argv=None):
    """Run the plugin with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Whatever happened, standard output is flushed before returning; when that fails (a full disk, a closed
    descriptor) it is pointed at /dev/null, so the interpreter's own flush at exit never prints
    ``Exception ignored ...`` nor turns the status into 120.
    """
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    finally:
        output = sys.modules.get(__package__ + ".output")  # not loaded: only _write_help wrote, and flushed
        if output is not None:
            output.flush_stdout()


def _main(argv):
    try:
        if argv[:1] == ["__complete"]:
            from .commands import complete
            return complete.run(argv[1:])
        text = _prerendered_help(argv)
        if text is not None:
            return _write_help(text)
        from . import cli, output
        try:
            invocation = cli.parse(argv)
        except cli.HelpRequested as shown:
            output.write_lines(shown.text.rstrip("\n").split("\n"))
            return 0
        cli.warn_unused_flags(invocation)
        from .kube import warning_headers
        warning_headers.handler = output.server_warning  # as kubectl's rest.SetDefaultWarningHandler
        from . import helpers
        helpers.end_on_termination()
        return _command(invocation.command)(invocation)
    except AicrError as exc:
        from . import output
        if _is_termination(exc):
            return _interrupted(str(exc), exc.exit_code)
        output.error(str(exc))
        for hint in getattr(exc, "hints", ()):
            output.hint(hint)
        return exc.exit_code
    except KeyboardInterrupt:
        from .helpers import EXIT_INTERRUPTED
        return _interrupted("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        from . import output
        output.silence_stdout()
        return 1
    except Exception as exc:  # a bug: one line, no traceback, no message text (it could hold anything)
        import traceback
        from . import output
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = " at %s:%d" % (os.path.basename(frame.filename), frame.lineno) if frame else ""
        output.error("internal error: %s%s; please report it" % (type(exc).__name__, where))
        return EXIT_INTERNAL


def _is_termination(exc):
    helpers = sys.modules.get(__package__ + ".helpers")
    return helpers is not None and isinstance(exc, helpers.Terminated)


def _interrupted(stop, code):
    """Report an interrupt that reached here (``stop``: "interrupted", "terminated by SIGTERM"; ``code``: its
    exit status) as what it means for a write command (commands/writes.py notes it; ``land`` reports the
    interrupts it catches itself): its decision already stored (``writes.recorded``): one warning, exit 0, a
    stored decision is never reported as a failure; its write under way (``writes.landing``): the write may
    have been recorded (exit 4); before it: nothing was written."""
    from . import output
    writes = sys.modules.get(__package__ + ".commands.writes")
    recorded, landing = getattr(writes, "recorded", None), getattr(writes, "landing", None)
    try:
        if recorded is not None:
            output.warning("the decision on rollout %s was recorded, but the command was %s before its "
                           "confirmation was printed; %s shows it"
                           % (recorded, stop, writes.describe_command(recorded)))
            return 0
        if landing is not None:
            from .errors import UnknownOutcome
            output.error("%s while the write was sent or answered; the write may have been recorded; check with "
                         "%s" % (stop, writes.describe_command(landing)))
            return UnknownOutcome.exit_code
        output.error(stop if writes is None else "%s before the write was sent; nothing was written" % stop)
    except (AicrError, OSError, ValueError):
        pass
    return code


def _write_help(text):
    """Write pre-rendered help (trusted text) as output.write_lines would, without loading its escaping."""
    if sys.stdout is None:
        raise AicrError("cannot write the output: standard output is closed")
    try:
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError) as exc:
        raise AicrError("cannot write the output: %s" % (getattr(exc, "strerror", None) or exc)) from None
    return 0
