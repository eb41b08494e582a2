# Written so that Python 2.7 and 3.0-3.7 can parse it: they must print one clear line, not a SyntaxError.
import sys

if sys.version_info < (3, 8):
    sys.stderr.write("error: kubectl-aicr needs Python 3.8 or newer (found %d.%d)\n" % sys.version_info[:2])
    sys.exit(1)

try:
    from kubectl_aicr.main import main  # noqa: E402
except KeyboardInterrupt:  # Ctrl-C while the modules load: the same line as later on
    sys.stderr.write("error: interrupted\n")
    sys.exit(130)

sys.exit(main())
