#!/usr/bin/env python3
"""Build dist/kubectl-aicr: one executable file, a zipapp of the kubectl_aicr package.

Usage: python3 build.py [--output PATH]

The archive is made with the standard library (zipfile, then zipapp, which adds
the ``#!/usr/bin/env python3`` line and the executable bit). It is reproducible:
entries in sorted order, fixed timestamps (1980-01-01, the zip epoch), fixed
permissions, no bytecode, so the same source gives the same bytes.

Why not shiv: a shiv file unpacks itself into ~/.shiv at first run, which fails
where HOME is read-only or unset (bastion hosts, CI sandboxes); the plugin has
no third-party runtime packages, so shiv would add nothing but that failure.
"""

import argparse
import io
import os
import sys
import zipapp
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "kubectl_aicr"
INTERPRETER = "/usr/bin/env python3"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def package_files():
    """(archive name, absolute path) for every .py file of the package, sorted."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return sorted(found)


def _entry(zf, name, data):
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100644 << 16
    info.create_system = 3  # Unix, whatever the build machine
    zf.writestr(info, data, compresslevel=9)


def archive_bytes():
    """The zip archive (without the interpreter line), as bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        # The archive's own __main__ is the package's: written for Python 2.7 to parse,
        # so that old interpreters print one clear line instead of a SyntaxError.
        with open(os.path.join(ROOT, PACKAGE, "__main__.py"), "rb") as handle:
            _entry(zf, "__main__.py", handle.read())
        for name, path in package_files():
            with open(path, "rb") as handle:
                _entry(zf, name, handle.read())
    return buffer.getvalue()


def build(output):
    """Write the executable zipapp to ``output`` atomically; return its size in bytes."""
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    temporary = output + ".tmp"
    zipapp.create_archive(io.BytesIO(archive_bytes()), temporary, interpreter=INTERPRETER)
    os.chmod(temporary, 0o755)
    os.replace(temporary, output)
    return os.path.getsize(output)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "dist", "kubectl-aicr"))
    args = parser.parse_args(argv)
    size = build(args.output)
    print("built %s (%d bytes)" % (os.path.relpath(args.output), size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
