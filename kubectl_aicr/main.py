"""The entry point: parse the command line, run one command, print errors as one ``error:`` line.

Exit status: 0 success (approve, revoke, acknowledge: the decision was recorded, also when its confirmation
could not be printed, which stderr then says); 1 an error (kubeconfig, credentials, transport, an API
error, a refusal); 2 a usage error; 3 content that failed verification (a
report or recipe that does not match its recorded digest); 130 interrupted
(Ctrl-C); 70 an internal error (a bug: reported without a traceback).
"""

import os
import sys

from . import cli, output
from .errors import AicrError

EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


def _not_implemented(invocation):
    raise AicrError("%s is not implemented yet" % invocation.command)


def _version(invocation):
    output.say(cli.version_text())
    return 0


def _command(name):
    if name in ("describe", "approve", "revoke", "acknowledge", "reproduce"):
        module = __import__("kubectl_aicr.commands." + name, fromlist=["run"])
        return module.run
    if name == "version":
        return _version
    return _not_implemented


def main(argv=None):
    """Run the plugin with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Whatever happened, standard output is flushed before returning; when that fails (a full disk, a closed
    descriptor) it is pointed at /dev/null, so the interpreter's own flush at exit never prints
    ``Exception ignored ...`` nor turns the status into 120.
    """
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    finally:
        _flush_stdout()


def _main(argv):
    try:
        if argv[:1] == ["__complete"]:
            from .commands import complete
            return complete.run(argv[1:])
        try:
            invocation = cli.parse(argv)
        except cli.HelpRequested as shown:
            output.write_lines(shown.text.rstrip("\n").split("\n"))
            return 0
        cli.warn_unused_flags(invocation)
        _end_on_termination()
        return _command(invocation.command)(invocation)
    except AicrError as exc:
        output.error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        output.error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except Exception as exc:  # a bug: one line, no traceback, no message text (it could hold anything)
        import traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        where = " at %s:%d" % (os.path.basename(frame.filename), frame.lineno) if frame else ""
        output.error("internal error: %s%s; please report it" % (type(exc).__name__, where))
        return EXIT_INTERNAL


def _end_on_termination():
    """SIGTERM and SIGHUP end the command through an exception, so every clean-up (temporary files, the
    private credential folder) runs, and the exit status is 128 + the signal, as a shell reports it."""
    import signal

    def on_signal(signum, frame):
        terminated = AicrError("terminated by %s" % signal.Signals(signum).name)
        terminated.exit_code = 128 + signum
        raise terminated

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), on_signal)


def _flush_stdout():
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        _silence_stdout()


def _silence_stdout():
    """After a closed pipe (``| head``), point stdout at /dev/null so the interpreter's flush at exit is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
