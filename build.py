#!/usr/bin/env python3
"""Build dist/kubectl-aicr: one executable file, a zipapp of the kubectl_aicr package.

Usage: python3 build.py [--output PATH] [--python X.Y=PATH ...]
       python3 build.py --release [--dist DIR] [--manifest PATH] [--python X.Y=PATH ...]

``--release`` also writes, into the dist folder, the one portable file under the
names the plugin page's install steps download (kubectl-aicr-<os>-<arch> for linux
and darwin on amd64 and arm64), the completion helper kubectl_complete-aicr, one
tar.gz per platform for krew (kubectl-aicr, kubectl_complete-aicr and LICENSE inside), and
SHA256SUMS; and it rewrites the krew manifest plugins/aicr.yaml to match them (files
installed, including LICENSE, and caveats: Python 3.8+, and how to link the completion
helper, since krew puts only its bin folder on PATH).

The archive is made with the standard library (zipfile, then zipapp, which adds
the ``#!/usr/bin/env python3`` line and the executable bit). It holds the source
(``kubectl_aicr/*.py``) and, for every supported CPython (3.8 to 3.13) found at build
time, the package's bytecode under ``pyc/<magic number in hex>/``, with that version's help texts pre-rendered by its
argparse (``kubectl_aicr/_prerendered``). At start-up ``__main__.py`` puts the folder
of the running interpreter's magic number (importlib.util.MAGIC_NUMBER) first on
sys.path; any other version runs from the source. A version with no interpreter at
build time is named on the build's output and runs from source.

Which interpreters compile (the first that exists, per version X.Y):
  1. ``--python X.Y=PATH`` (repeatable), else an ``X.Y=PATH`` word of $AICR_BUILD_PYTHONS
     (space-separated); a path given this way must exist and be that version;
  2. ``$(pyenv root)/versions/<pinned X.Y.Z>/bin/python``, else the newest X.Y.* there;
  3. ``python3.Y`` on PATH (how the release workflow finds what actions/setup-python installed).
The build prints the interpreter and its full version for each. The exact patch versions are
pinned in ``.python-versions`` (one X.Y.Z a line; the release workflow installs the same file with
actions/setup-python): bytecode and argparse's pre-rendered help may change between patch releases,
so equal bytes need equal patch versions. ``--release`` refuses to build unless every pinned version
compiles with exactly that patch version; a plain build warns that its output is not reproducible.

``__main__.py`` and the bytecode are stored uncompressed (a start never loads zlib; the file is
about 2 MB), the source deflated. It is reproducible: entries in sorted order, fixed timestamps
(1980-01-01, the zip epoch), fixed permissions, and unchecked hash-based pycs (PEP 552: no timestamps),
compiled with PYTHONHASHSEED=0; so the same source and interpreters give the same bytes.

Why not shiv: a shiv file unpacks itself into ~/.shiv at first run, which fails
where HOME is read-only or unset (bastion hosts, CI sandboxes); the plugin has
no third-party runtime packages, so shiv would add nothing but that failure.
"""

import argparse
import base64
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipapp
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "kubectl_aicr"
INTERPRETER = "/usr/bin/env python3"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SUPPORTED = ((3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13))  # CPython versions shipped as bytecode
PIN_FILE = ".python-versions"  # the exact X.Y.Z of each SUPPORTED version; the release workflow reads it too
PRERENDERED = "kubectl_aicr/_prerendered.py"  # generated per version: its argparse's help texts
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


def _entry(zf, name, data, compress=True):
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    info.external_attr = 0o100644 << 16
    info.create_system = 3  # Unix, whatever the build machine
    zf.writestr(info, data, compresslevel=9 if compress else None)


# Run by each target interpreter (-s -S, PYTHONHASHSEED=0, no other environment): reads
# {"root": ..., "files": [[name, base64 source], ...]} on stdin, writes {"magic", "version",
# "pycs": {name: base64 pyc}} on stdout. A pyc is PEP 552's unchecked hash-based form: magic,
# flags 0b01, the source's siphash, then marshal data: no timestamp, so reproducible.
_COMPILER = r"""
import sys
sys.path[:] = [p for p in sys.path if p]
sys.dont_write_bytecode = True
import base64, importlib.util, json, marshal
request = json.load(sys.stdin)
sys.path.insert(0, request["root"])
from kubectl_aicr import cli
files = [(name, base64.b64decode(text)) for name, text in request["files"]]
files.append((request["prerendered"], cli.prerendered_source().encode("utf-8")))
pycs = {}
for name, source in sorted(files):
    code = compile(source, name, "exec", dont_inherit=True, optimize=0)
    data = (importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + importlib.util.source_hash(source)
            + marshal.dumps(code))
    pycs[name[:-3] + ".pyc"] = base64.b64encode(data).decode("ascii")
json.dump({"magic": importlib.util.MAGIC_NUMBER.hex(), "version": "%d.%d.%d" % sys.version_info[:3],
           "pycs": pycs}, sys.stdout)
"""


def pyenv_root():
    """$PYENV_ROOT, else what `pyenv root` prints, else ~/.pyenv."""
    if os.environ.get("PYENV_ROOT"):
        return os.environ["PYENV_ROOT"]
    try:
        return subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return os.path.expanduser("~/.pyenv")


def pinned(path=None):
    """{(major, minor): "X.Y.Z"} read from .python-versions: one line per SUPPORTED version, nothing else."""
    path = path or os.path.join(ROOT, PIN_FILE)
    try:
        with open(path, encoding="utf-8") as handle:
            lines = [line.strip() for line in handle if line.strip()]
    except OSError as error:
        raise SystemExit("build.py: cannot read the interpreter pins %s: %s" % (path, error.strerror))
    pins = {}
    for line in lines:
        match = re.match(r"^(\d+)\.(\d+)\.\d+$", line)
        if not match:
            raise SystemExit("build.py: %s: %r is not an exact X.Y.Z version" % (path, line))
        pins[(int(match.group(1)), int(match.group(2)))] = line
    if sorted(pins) != sorted(SUPPORTED) or len(lines) != len(SUPPORTED):
        raise SystemExit("build.py: %s must pin each of %s exactly once" % (
            path, ", ".join("%d.%d" % v for v in SUPPORTED)))
    return pins


def explicit_pythons(options=(), environ=None):
    """{(major, minor): path} from ``X.Y=PATH`` words: $AICR_BUILD_PYTHONS first, then ``options`` (--python) over it."""
    environ = os.environ if environ is None else environ
    found = {}
    for word in environ.get("AICR_BUILD_PYTHONS", "").split() + list(options):
        match = re.match(r"^(\d+)\.(\d+)=(.+)$", word)
        if not match or (int(match.group(1)), int(match.group(2))) not in SUPPORTED:
            raise SystemExit("build.py: %r is not X.Y=PATH for one of %s" % (
                word, ", ".join("%d.%d" % v for v in SUPPORTED)))
        path = os.path.abspath(os.path.expanduser(match.group(3)))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SystemExit("build.py: %s: no executable interpreter at %s" % (word.split("=")[0], path))
        found[(int(match.group(1)), int(match.group(2)))] = path
    return found


def full_version(python):
    """"X.Y.Z" that ``python`` reports, or None when it does not run (a broken shim, a missing library)."""
    try:
        out = subprocess.run([python, "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True,
                             timeout=30, env={"PATH": os.environ.get("PATH", "")})
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def interpreters(versions=SUPPORTED, root=None, explicit=None, pins=None):
    """{(major, minor): python path or None}, looked up in the module docstring's order.

    ``explicit`` as explicit_pythons returns (default: $AICR_BUILD_PYTHONS); ``pins`` as pinned returns.
    """
    explicit = explicit_pythons() if explicit is None else explicit
    pins = pinned() if pins is None else pins
    folder = os.path.join(root or pyenv_root(), "versions")
    found = {}
    for version in versions:
        found[version] = explicit.get(version)
        exact = os.path.join(folder, pins[version], "bin", "python")
        if found[version] is None and os.access(exact, os.X_OK):
            found[version] = exact
        if found[version] is None:
            best = None
            for path in glob.glob(os.path.join(folder, "%d.%d.*" % version)):
                match = re.match(r"^\d+\.\d+\.(\d+)$", os.path.basename(path))
                python = os.path.join(path, "bin", "python")
                if match and os.access(python, os.X_OK) and (best is None or int(match.group(1)) > best[0]):
                    best = (int(match.group(1)), python)
            found[version] = best[1] if best else None
        if found[version] is None:
            python = shutil.which("python%d.%d" % version)
            reported = full_version(python) if python else None
            if reported and tuple(int(p) for p in reported.split(".")[:2]) == version:
                found[version] = python
    return found


def compile_for(pythons):
    """{magic hex: (X.Y.Z, {archive name: pyc bytes}, python)} from each interpreter in ``pythons``, side by side."""
    request = json.dumps({"root": ROOT, "prerendered": PRERENDERED, "files": [
        (name, base64.b64encode(open(path, "rb").read()).decode("ascii")) for name, path in package_files()]})
    running = []
    for python in pythons:
        process = subprocess.Popen([python, "-s", "-S", "-c", _COMPILER], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, env={"PYTHONHASHSEED": "0"}, cwd=ROOT)
        running.append((python, process))
    compiled = {}
    for python, process in running:
        out, _ = process.communicate(request.encode("ascii"))
        if process.returncode != 0:
            raise SystemExit("build.py: compiling with %s failed (exit %d)" % (python, process.returncode))
        answer = json.loads(out)
        compiled[answer["magic"]] = (answer["version"], {
            name: base64.b64decode(data) for name, data in answer["pycs"].items()}, python)
    return compiled


def archive_bytes(compiled=None):
    """The zip archive (without the interpreter line), as bytes; ``compiled`` as compile_for returns it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        # The archive's own __main__ is the package's: written for Python 2.7 to parse,
        # so that old interpreters print one clear line instead of a SyntaxError.
        with open(os.path.join(ROOT, PACKAGE, "__main__.py"), "rb") as handle:
            _entry(zf, "__main__.py", handle.read(), compress=False)
        for name, path in package_files():
            with open(path, "rb") as handle:
                _entry(zf, name, handle.read())
        for magic in sorted(compiled or {}):
            for name, data in sorted(compiled[magic][1].items()):
                # Stored, not deflated: a start with this version's bytecode never loads zlib nor inflates.
                _entry(zf, "pyc/%s/%s" % (magic, name), data, compress=False)
    return buffer.getvalue()


def build(output, versions=SUPPORTED, say=print, explicit=None, strict=False):
    """Write the executable zipapp to ``output`` atomically, with bytecode for ``versions``; return its size.

    Says which interpreter (full version) compiled each version. ``strict`` (a release): SystemExit, before
    anything is written, unless every version compiled with its pinned X.Y.Z (.python-versions).
    """
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    pins = pinned()
    found = interpreters(versions, explicit=explicit, pins=pins)
    problems = []
    for version, python in sorted(found.items()):
        if python is None:
            problems.append("no Python %d.%d (pinned %s) found: not given by --python or AICR_BUILD_PYTHONS, "
                            "none under %s/versions, no python%d.%d on PATH"
                            % (version + (pins[version], pyenv_root()) + version))
            if not strict:
                say("note: %s: that version will run from source (slower start)" % problems[-1])
    compiled = compile_for([python for _, python in sorted(found.items()) if python])
    by_python = {python: (magic, reported) for magic, (reported, _, python) in compiled.items()}
    for version, python in sorted((v, p) for v, p in found.items() if p):
        magic, reported = by_python[python]
        if tuple(int(p) for p in reported.split(".")[:2]) != version:
            raise SystemExit("build.py: %s is Python %s, not %d.%d" % ((python, reported) + version))
        pin = pins[version]
        say("compiled %d.%d bytecode (magic %s) with %s: CPython %s%s" % (version + (magic, python, reported,
            "" if reported == pin else " (pinned %s)" % pin)))
        if reported != pin:
            problems.append("Python %d.%d is %s at %s, but %s pins %s (bytecode and help texts may differ)"
                            % (version + (reported, python, PIN_FILE, pin)))
            if not strict:
                say("WARNING: %s: this build is NOT reproducible" % problems[-1])
    if strict and problems:
        raise SystemExit("build.py: a release needs every pinned interpreter (%s):\n  %s" % (
            PIN_FILE, "\n  ".join(problems)))
    temporary = "%s.%d.tmp" % (output, os.getpid())
    zipapp.create_archive(io.BytesIO(archive_bytes(compiled)), temporary, interpreter=INTERPRETER)
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


def release(dist, manifest_path, explicit=None):
    """Write the release files into ``dist`` and the krew manifest to ``manifest_path``; return their names.

    SystemExit, writing nothing, unless every pinned interpreter is there (build's ``strict``).
    """
    main_file = os.path.join(dist, "kubectl-aicr")
    build(main_file, explicit=explicit, strict=True)
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
    parser.add_argument("--pythons", metavar="X.Y,...",
                        help="bytecode for these versions only (default: %s; '' for none)"
                             % ",".join("%d.%d" % v for v in SUPPORTED))
    parser.add_argument("--python", action="append", default=[], metavar="X.Y=PATH",
                        help="compile version X.Y's bytecode with this interpreter (repeatable; over "
                             "$AICR_BUILD_PYTHONS, then $(pyenv root)/versions, then python3.Y on PATH)")
    args = parser.parse_args(argv)
    explicit = explicit_pythons(args.python)
    versions = SUPPORTED if args.pythons is None else tuple(
        tuple(int(p) for p in v.split(".")) for v in args.pythons.split(",") if v)
    if args.release:
        os.makedirs(args.dist, exist_ok=True)
        if args.pythons is not None:
            parser.error("--pythons: a release carries bytecode for every supported version")
        for name in release(args.dist, args.manifest, explicit=explicit):
            print("released %s" % os.path.join(os.path.relpath(args.dist), name))
        print("wrote %s" % os.path.relpath(args.manifest))
        return 0
    size = build(args.output, versions, explicit=explicit)
    print("built %s (%d bytes)" % (os.path.relpath(args.output), size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
