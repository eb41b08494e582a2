# Written so that Python 2.7 and 3.0-3.7 can parse it: they must print one clear line, not a SyntaxError.
# It is the built file's __main__.py too (build.py), compiled at every start: keep it this small. From the
# built file it puts the bytecode made for this interpreter first on sys.path (pyc/<importlib.util.MAGIC_NUMBER
# in hex>/; a Python the build had no interpreter for finds nothing there and runs from the source), then
# kubectl_aicr/start.py does the rest (leaving the user's Python environment behind, then main).
import sys

if sys.version_info < (3, 8):
    sys.stderr.write("error: kubectl-aicr needs Python 3.8 or newer (found %d.%d)\n" % sys.version_info[:2])
    sys.exit(1)

_archive = getattr(__loader__, "archive", None) if getattr(__loader__, "prefix", None) == "" else None  # noqa
if _archive:
    import importlib.util  # noqa: E402 (loaded by runpy already)
    import os  # noqa: E402 (loaded by the interpreter's start-up already)
    sys.path.insert(0, os.path.join(_archive, "pyc", importlib.util.MAGIC_NUMBER.hex()))

from kubectl_aicr.start import run  # noqa: E402

run(_archive)
