# Written so that Python 2.7 and 3.0-3.7 can parse it: they must print one clear line, not a SyntaxError.
#
# Run from the built file (a zipapp, build.py) it also:
# - leaves the user's Python environment behind: when the interpreter is not isolated and the environment could
#   change what runs (a PYTHON* variable other than the harmless ones in _HARMLESS, a user site-packages folder on sys.path, a sitecustomize or
#   usercustomize module), it runs itself again as `python -I -S FILE ARGS` (same interpreter, same process id,
#   through exec): no PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT, PYTHONUSERBASE, user or system
#   site-packages, *customize module or current folder in that run;
# - loads the bytecode built for this interpreter: pyc/<importlib.util.MAGIC_NUMBER in hex>/ goes first on
#   sys.path; a Python the build had no interpreter for finds nothing there and runs from the source.
import sys

if sys.version_info < (3, 8):
    sys.stderr.write("error: kubectl-aicr needs Python 3.8 or newer (found %d.%d)\n" % sys.version_info[:2])
    sys.exit(1)

import os  # noqa: E402 (loaded by the interpreter's start-up already)

# Variables that neither run code, nor add a folder to sys.path, nor print (Docker images set the first two).
# PYTHONIOENCODING and PYTHONUTF8 only choose the terminal's encoding; an isolated run keeps them
# (_keep_stream_encoding, -X utf8).
_HARMLESS = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONNOUSERSITE", "PYTHONSAFEPATH",
             "PYTHONPYCACHEPREFIX", "PYTHONIOENCODING", "PYTHONUTF8")


def _environment_reasons():
    """What, in this process's start, the user's Python environment could have changed (empty: nothing)."""
    reasons = sorted(name for name in os.environ if name.startswith("PYTHON") and name not in _HARMLESS)
    site = sys.modules.get("site")
    user_site = getattr(site, "USER_SITE", None) if getattr(site, "ENABLE_USER_SITE", False) else None
    if user_site and user_site in sys.path:
        reasons.append("user site-packages")
    reasons += [name for name in ("sitecustomize", "usercustomize") if name in sys.modules]
    return reasons


def _isolate(archive):
    if sys.flags.isolated or not sys.executable or not _environment_reasons():
        return
    utf8 = ["-X", "utf8=%d" % sys.flags.utf8_mode] if os.environ.get("PYTHONUTF8") else []
    try:
        os.execv(sys.executable, [sys.executable, "-I", "-S"] + utf8 + [archive] + sys.argv[1:])
    except OSError:  # cannot run the interpreter again (no exec here): carry on as started
        pass


def _keep_stream_encoding():
    """In an isolated run, PYTHONIOENCODING still chooses stdout's encoding (and errors) and stderr's encoding,
    as it did in the run that started this one (an unknown encoding is ignored)."""
    value = os.environ.get("PYTHONIOENCODING") if sys.flags.isolated else None
    if not value:
        return
    encoding, _, errors = value.partition(":")
    for stream, stream_errors in ((sys.stdout, errors), (sys.stderr, None)):
        try:
            stream.reconfigure(encoding=encoding or None, errors=stream_errors or None)
        except (AttributeError, LookupError, ValueError):
            pass


_archive = getattr(__loader__, "archive", None) if getattr(__loader__, "prefix", None) == "" else None  # noqa
if _archive:
    _isolate(sys.argv[0] if os.path.exists(sys.argv[0]) else _archive)
    _keep_stream_encoding()
    import importlib.util  # noqa: E402 (loaded by runpy already)
    sys.path.insert(0, os.path.join(_archive, "pyc", importlib.util.MAGIC_NUMBER.hex()))

try:
    from kubectl_aicr.main import main  # noqa: E402
except KeyboardInterrupt:  # Ctrl-C while the modules load: the same line as later on
    sys.stderr.write("error: interrupted\n")
    sys.exit(130)

sys.exit(main())
