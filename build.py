#!/usr/bin/env python3
"""Build dist/kubectl-aicr: one executable file, a zipapp of the kubectl_aicr package.

Usage: python3 build.py [--output PATH]
       python3 build.py --release [--dist DIR] [--manifest PATH]

``--release`` also writes, into the dist folder, the one portable file under the
names the plugin page's install steps download (kubectl-aicr-<os>-<arch> for linux
and darwin on amd64 and arm64), the completion helper kubectl_complete-aicr, one
tar.gz per platform for krew (kubectl-aicr, kubectl_complete-aicr and LICENSE inside), and
SHA256SUMS; and it rewrites the krew manifest plugins/aicr.yaml to match them (files
installed, including LICENSE, and caveats: Python 3.8+, and how to link the completion
helper, since krew puts only its bin folder on PATH).

The archive is made with the standard library (zipfile, then zipapp, which adds
the ``#!/usr/bin/env python3`` line and the executable bit). It is reproducible:
entries in sorted order, fixed timestamps (1980-01-01, the zip epoch), fixed
permissions, no bytecode, so the same source gives the same bytes.

Why not shiv: a shiv file unpacks itself into ~/.shiv at first run, which fails
where HOME is read-only or unset (bastion hosts, CI sandboxes); the plugin has
no third-party runtime packages, so shiv would add nothing but that failure.
"""

import argparse
import gzip
import hashlib
import io
import os
import re
import sys
import tarfile
import zipapp
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "kubectl_aicr"
INTERPRETER = "/usr/bin/env python3"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
PLATFORMS = (("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"))
RELEASE_URL = "https://github.com/NVIDIA/aicr/releases/download/v{version}/{name}"
COMPLETION = "kubectl_complete-aicr"
LICENSE = "LICENSE"  # Apache-2.0, as AICR; krew wants it in every archive and installed by the manifest
COMPLETION_SCRIPT = b"""#!/bin/sh
# kubectl 1.26+ runs this to complete `kubectl aicr ...`: arguments are the words after
# `aicr`, the last one the word being completed (k8s.io/kubectl pkg/cmd/plugin_completion.go).
exec kubectl-aicr __complete "$@"
"""


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
    temporary = "%s.%d.tmp" % (output, os.getpid())
    zipapp.create_archive(io.BytesIO(archive_bytes()), temporary, interpreter=INTERPRETER)
    os.chmod(temporary, 0o755)
    os.replace(temporary, output)
    return os.path.getsize(output)


def version():
    """The version, read from kubectl_aicr/__init__.py (its one home) without importing the package."""
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as handle:
        return re.search(r'^__version__ = "([^"]+)"', handle.read(), re.M).group(1)


def _write(path, data, mode):
    temporary = "%s.%d.tmp" % (path, os.getpid())
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


def _tarball(members):
    """A reproducible .tar.gz of ``members`` [(name, bytes, mode)]: fixed owner, times and order."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def krew_manifest(release_version, sums):
    """The krew plugin manifest (plugins/aicr.yaml) for the release tarballs whose sha256 are in ``sums``."""
    lines = [
        "# Generated by `make release` (build.py); do not edit by hand.",
        "apiVersion: krew.googlecontainertools.github.com/v1alpha2",
        "kind: Plugin",
        "metadata:",
        "  name: aicr",
        "spec:",
        "  version: v%s" % release_version,
        "  homepage: https://github.com/NVIDIA/aicr",
        "  shortDescription: Inspect, approve and revoke NVIDIA AI Cluster Runtime rollouts",
        "  description: |",
        "    Inspect, approve, revoke and acknowledge the rollouts that NVIDIA's AI Cluster Runtime",
        "    (AICR) operator makes, and check a plan's bundle against the AICR CLI. Needs Python 3.8+.",
        "  caveats: |",
        "    kubectl aicr runs with python3 from PATH, which must be Python 3.8 or newer",
        "    (check with `python3 --version`).",
        "",
        "    Shell completion (kubectl 1.26+): krew puts only its bin folder on PATH, so link",
        "    the completion helper there yourself (again after each `kubectl krew upgrade aicr`):",
        "",
        '      ln -sf "${KREW_ROOT:-$HOME/.krew}/store/aicr/v%s/%s" \\' % (release_version, COMPLETION),
        '        "${KREW_ROOT:-$HOME/.krew}/bin/%s"' % COMPLETION,
        "  platforms:",
    ]
    for os_name, arch in PLATFORMS:
        name = "kubectl-aicr-%s-%s.tar.gz" % (os_name, arch)
        lines += [
            "  - selector:",
            "      matchLabels:",
            "        os: %s" % os_name,
            "        arch: %s" % arch,
            "    uri: %s" % RELEASE_URL.format(version=release_version, name=name),
            "    sha256: %s" % sums[name],
            "    files:",
            "    - from: kubectl-aicr",
            "      to: .",
            "    - from: %s" % COMPLETION,
            "      to: .",
            "    - from: %s" % LICENSE,
            "      to: .",
            "    bin: kubectl-aicr",
        ]
    return "\n".join(lines) + "\n"


def release(dist, manifest_path):
    """Write the release files into ``dist`` and the krew manifest to ``manifest_path``; return their names."""
    main_file = os.path.join(dist, "kubectl-aicr")
    build(main_file)
    with open(main_file, "rb") as handle:
        program = handle.read()
    with open(os.path.join(ROOT, LICENSE), "rb") as handle:
        license_text = handle.read()
    files = {"kubectl-aicr": (program, 0o755), COMPLETION: (COMPLETION_SCRIPT, 0o755)}
    for os_name, arch in PLATFORMS:
        files["kubectl-aicr-%s-%s" % (os_name, arch)] = (program, 0o755)
        files["kubectl-aicr-%s-%s.tar.gz" % (os_name, arch)] = (_tarball(
            [("kubectl-aicr", program, 0o755), (COMPLETION, COMPLETION_SCRIPT, 0o755),
             (LICENSE, license_text, 0o644)]), 0o644)
    for name, (data, mode) in files.items():
        _write(os.path.join(dist, name), data, mode)
    sums = {name: hashlib.sha256(data).hexdigest() for name, (data, _) in files.items()}
    _write(os.path.join(dist, "SHA256SUMS"),
           "".join("%s  %s\n" % (sums[name], name) for name in sorted(sums)).encode(), 0o644)
    os.makedirs(os.path.dirname(os.path.abspath(manifest_path)), exist_ok=True)
    _write(manifest_path, krew_manifest(version(), sums).encode(), 0o644)
    return sorted(files) + ["SHA256SUMS"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=os.path.join(ROOT, "dist", "kubectl-aicr"))
    parser.add_argument("--release", action="store_true", help="write every release file and the krew manifest")
    parser.add_argument("--dist", default=os.path.join(ROOT, "dist"))
    parser.add_argument("--manifest", default=os.path.join(ROOT, "plugins", "aicr.yaml"))
    args = parser.parse_args(argv)
    if args.release:
        os.makedirs(args.dist, exist_ok=True)
        for name in release(args.dist, args.manifest):
            print("released %s" % os.path.join(os.path.relpath(args.dist), name))
        print("wrote %s" % os.path.relpath(args.manifest))
        return 0
    size = build(args.output)
    print("built %s (%d bytes)" % (os.path.relpath(args.output), size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
