#!/usr/bin/env python3
"""Run every benchmark: each ``benchmarks/*_bench.py`` module's ``main()``, in name order (``make bench``).

Each module prints its own figures; this driver prints a heading per module and how long
it took, and exits non-zero if a module's ``main()`` returned non-zero or raised.

Usage: python benchmarks/run.py [NAME ...]   (names without ``_bench.py``; default: all)
"""

import glob
import importlib.util
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def modules(names=None):
    """[(name, path)] of the benchmark modules, sorted; only ``names`` when given."""
    found = []
    for path in sorted(glob.glob(os.path.join(HERE, "*_bench.py"))):
        name = os.path.basename(path)[:-len("_bench.py")]
        if not names or name in names:
            found.append((name, path))
    return found


def run_one(name, path):
    """Import the module from ``path`` and run its ``main()``; return its exit status."""
    spec = importlib.util.spec_from_file_location("%s_bench" % name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main() or 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    found = modules(argv)
    if not found:
        print("no benchmark matches %s" % " ".join(argv))
        return 2
    failures = 0
    for name, path in found:
        print("== %s (%s)" % (name, os.path.relpath(path)))
        sys.stdout.flush()
        started = time.perf_counter()
        try:
            status = run_one(name, path)
        except Exception:  # a broken benchmark is reported, and the others still run
            traceback.print_exc()
            status = 1
        failures += status != 0
        print("-- %s: %s in %.1f s\n" % (name, "done" if status == 0 else "FAILED (%s)" % status,
                                         time.perf_counter() - started))
        sys.stdout.flush()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
