"""Shipping like a kubectl plugin: reproducible release files, the krew manifest, old Pythons, kubectl
discovery, read-only and HOME-less machines, non-root users, and the minimum Python version."""

import filecmp
import os
import pwd
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

from tests.support.plugin import ROOT, VENV_BIN, base_env, plugin_command

KUBECTL = os.path.join(VENV_BIN, "kubectl")
PYENV_VERSIONS = os.path.join(os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"), "versions")
SOURCES = ["build.py", "kubectl_aicr", "LICENSE", ".python-versions"]


def project_version():
    import re
    text = open(os.path.join(ROOT, "kubectl_aicr", "__init__.py")).read()
    return re.search(r'^__version__ = "([^"]+)"', text, re.M).group(1)


def _copy_sources(target):
    for name in SOURCES:
        source = os.path.join(ROOT, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(target, name), ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, target)


def _release(tree):
    subprocess.run([sys.executable, "build.py", "--release"], cwd=tree, check=True, stdout=subprocess.DEVNULL)
    return os.path.join(tree, "dist")


@pytest.fixture(scope="module")
def two_releases(tmp_path_factory):
    trees = []
    for label in ("one", "two"):
        tree = tmp_path_factory.mktemp(label)
        _copy_sources(str(tree))
        os.utime(os.path.join(str(tree), "build.py"), (0, 0 if label == "one" else 10 ** 9))  # mtimes must not leak
        trees.append(str(tree))
    return [(_release(tree), tree) for tree in trees]


def test_release_is_reproducible_byte_for_byte(two_releases):
    (dist_a, tree_a), (dist_b, tree_b) = two_releases
    names = sorted(os.listdir(dist_a))
    assert names == sorted(os.listdir(dist_b))
    expected = ["SHA256SUMS", "kubectl-aicr"] + ["kubectl-aicr-%s-%s%s" % (o, a, ext) for o in ("darwin", "linux")
                                                 for a in ("amd64", "arm64") for ext in ("", ".tar.gz")]
    assert sorted(names) == sorted(expected + ["kubectl_complete-aicr"])
    match, mismatch, errors = filecmp.cmpfiles(dist_a, dist_b, names, shallow=False)
    assert mismatch == [] and errors == []
    assert filecmp.cmp(os.path.join(tree_a, "plugins", "aicr.yaml"), os.path.join(tree_b, "plugins", "aicr.yaml"),
                       shallow=False)


def test_platform_files_are_the_one_portable_file_and_sums_match(two_releases):
    import hashlib
    dist, _ = two_releases[0]
    main = open(os.path.join(dist, "kubectl-aicr"), "rb").read()
    assert main.startswith(b"#!/usr/bin/env python3\n")
    for name in os.listdir(dist):
        if name.startswith("kubectl-aicr-") and not name.endswith(".tar.gz"):
            assert open(os.path.join(dist, name), "rb").read() == main
            assert os.stat(os.path.join(dist, name)).st_mode & stat.S_IXUSR
    for line in open(os.path.join(dist, "SHA256SUMS")).read().splitlines():
        digest, name = line.split("  ")
        assert hashlib.sha256(open(os.path.join(dist, name), "rb").read()).hexdigest() == digest


def test_committed_krew_manifest_matches_the_release(two_releases):
    """plugins/aicr.yaml must be regenerated (make release) whenever the file changes."""
    import hashlib
    import tarfile
    dist, tree = two_releases[0]
    fresh = open(os.path.join(tree, "plugins", "aicr.yaml")).read()
    committed = open(os.path.join(ROOT, "plugins", "aicr.yaml")).read()
    assert committed == fresh, "plugins/aicr.yaml is stale: run `make release` and commit it"
    manifest = yaml.safe_load(committed)
    assert manifest["metadata"]["name"] == "aicr"
    version = project_version()
    assert manifest["spec"]["version"] == "v" + version
    seen = set()
    for platform in manifest["spec"]["platforms"]:
        labels = platform["selector"]["matchLabels"]
        name = "kubectl-aicr-%s-%s.tar.gz" % (labels["os"], labels["arch"])
        seen.add((labels["os"], labels["arch"]))
        assert platform["uri"].endswith("/v%s/%s" % (version, name))
        path = os.path.join(dist, name)
        assert platform["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest()
        with tarfile.open(path) as tar:
            members = {m.name: m for m in tar.getmembers()}
            assert platform["bin"] in members and members[platform["bin"]].mode & 0o111
            assert {f["from"] for f in platform["files"]} <= set(members)
    assert seen == {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")}


def test_each_archive_holds_the_license_and_the_manifest_installs_it(two_releases):
    """krew's conventions: the license inside every archive, and installed by the manifest's ``files``."""
    import tarfile
    dist, tree = two_releases[0]
    license_text = open(os.path.join(ROOT, "LICENSE"), "rb").read()
    assert license_text.lstrip().startswith(b"Apache License\n                           Version 2.0, January 2004")
    assert b"END OF TERMS AND CONDITIONS" in license_text  # the full text, not a notice
    archives = sorted(n for n in os.listdir(dist) if n.endswith(".tar.gz"))
    assert len(archives) == 4
    for name in archives:
        with tarfile.open(os.path.join(dist, name)) as tar:
            member = tar.getmember("LICENSE")
            assert member.isfile() and member.mode == 0o644
            assert tar.extractfile(member).read() == license_text, name
    manifest = yaml.safe_load(open(os.path.join(tree, "plugins", "aicr.yaml")))
    for platform in manifest["spec"]["platforms"]:
        assert {"from": "LICENSE", "to": "."} in platform["files"]


def _krew_install(manifest, dist, krew_root):
    """Lay the plugin out as `kubectl krew install` does: each ``files`` entry copied into
    store/<name>/<version>/, and bin/kubectl-<name> a symbolic link to the manifest's ``bin``
    (sigs.k8s.io/krew internal/installation: install.go, move.go)."""
    import tarfile
    spec = manifest["spec"]
    platform = next(p for p in spec["platforms"] if p["selector"]["matchLabels"] == {"os": "linux", "arch": "amd64"})
    store = os.path.join(krew_root, "store", manifest["metadata"]["name"], spec["version"])
    os.makedirs(store)
    with tarfile.open(os.path.join(dist, os.path.basename(platform["uri"]))) as tar:
        for entry in platform["files"]:
            member = tar.getmember(entry["from"])
            with open(os.path.join(store, entry["to"], entry["from"]), "wb") as handle:
                handle.write(tar.extractfile(member).read())
            os.chmod(os.path.join(store, entry["to"], entry["from"]), member.mode)
    os.makedirs(os.path.join(krew_root, "bin"))
    os.symlink(os.path.join(store, platform["bin"]),
               os.path.join(krew_root, "bin", "kubectl-" + manifest["metadata"]["name"]))
    return store


def test_manifest_caveats_name_python_and_the_completion_link_that_works(two_releases, tmp_path):
    dist, tree = two_releases[0]
    manifest = yaml.safe_load(open(os.path.join(tree, "plugins", "aicr.yaml")))
    caveats = manifest["spec"]["caveats"]
    assert "python3" in caveats and "Python 3.8 or newer" in caveats
    assert "krew puts only its bin folder on PATH" in caveats
    krew_root = str(tmp_path / "krew")
    store = _krew_install(manifest, dist, krew_root)
    assert sorted(os.listdir(store)) == ["LICENSE", "kubectl-aicr", "kubectl_complete-aicr"]
    # The caveat's command, run as printed (continuation lines and all), links the helper into krew's bin.
    command = caveats[caveats.index("ln -sf"):]
    env = {"PATH": "/usr/bin:/bin", "KREW_ROOT": krew_root, "HOME": str(tmp_path)}
    linked = subprocess.run(["sh", "-c", command], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    assert linked.returncode == 0, linked.stderr
    helper = os.path.join(krew_root, "bin", "kubectl_complete-aicr")
    assert os.path.realpath(helper) == os.path.realpath(os.path.join(store, "kubectl_complete-aicr"))
    # With only krew's bin on PATH (and the interpreter's folder), kubectl's completion call works.
    shim = tmp_path / "python"
    shim.mkdir()
    os.symlink(sys.executable, str(shim / "python3"))
    env["PATH"] = os.pathsep.join([os.path.join(krew_root, "bin"), str(shim), "/usr/bin", "/bin"])
    completed = subprocess.run(["kubectl_complete-aicr", "desc"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[0] == "describe", completed.stdout


@pytest.mark.parametrize("version", ["2.7", "3.6", "3.7"])
def test_old_pythons_print_one_clear_line(plugin, version):
    found = sorted(v for v in os.listdir(PYENV_VERSIONS) if v.startswith(version + ".")) \
        if os.path.isdir(PYENV_VERSIONS) else []
    if not found:
        pytest.skip("no Python %s under %s" % (version, PYENV_VERSIONS))
    python = os.path.join(PYENV_VERSIONS, found[-1], "bin", "python")
    result = subprocess.run([python, plugin, "describe", "x"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    assert result.returncode == 1
    assert result.stderr == "error: kubectl-aicr needs Python 3.8 or newer (found %s)\n" % version
    assert result.stdout == ""


def test_version_names_the_version_and_python(run):
    version = project_version()
    for args in (["--version"], ["version"], ["describe", "x", "--version"]):
        result = run(*args)
        assert result.returncode == 0
        assert result.stdout.startswith("kubectl-aicr %s (Python 3." % version), result.stdout


def test_minimum_python_is_3_8_statically():
    result = subprocess.run([os.path.join(VENV_BIN, "vermin"), "-t=3.8-", "--no-tips", "--violations",
                             "--eval-annotations", os.path.join(ROOT, "kubectl_aicr")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert result.returncode == 0, result.stdout


def _path_with(folder):
    return os.pathsep.join([str(folder), VENV_BIN, "/usr/bin", "/bin"])


def test_kubectl_finds_and_runs_the_plugin(plugin, api_server, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(plugin, bin_dir / "kubectl-aicr")
    env = dict(base_env(tmp_path), PATH=_path_with(bin_dir) + os.pathsep + base_env(tmp_path)["PATH"])
    listed = subprocess.run([KUBECTL, "plugin", "list"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True)
    assert listed.returncode == 0, listed.stderr
    assert str(bin_dir / "kubectl-aicr") in listed.stdout.splitlines()
    assert "warning" not in (listed.stdout + listed.stderr).lower()
    kubeconfig = api_server.write_kubeconfig(str(tmp_path / "kc"), user="carol@example.com")
    name = api_server.fixture_name("install")
    described = subprocess.run([KUBECTL, "aicr", "describe", name, "--kubeconfig", kubeconfig], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert described.returncode == 0, described.stderr
    assert "Name:                %s" % name in described.stdout
    failing = subprocess.run([KUBECTL, "aicr", "describe", "nope", "--kubeconfig", kubeconfig], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert failing.returncode == 1
    assert failing.stderr == 'error: runtimerollouts.operator.aicr.run "nope" not found\n'


def _world_readable_dir(tmp_path, name):
    import tempfile
    folder = tempfile.mkdtemp(prefix="aicr-%s-" % name, dir="/tmp")
    os.chmod(folder, 0o755)
    return folder


def _others_can_run(path):
    """True when the mode bits let a user who is neither owner nor in the group run ``path``: the file
    executable by others and every folder above it searchable by them (ACLs aside)."""
    path = os.path.realpath(path)
    if not os.stat(path).st_mode & stat.S_IXOTH:
        return False
    folder = os.path.dirname(path)
    while True:
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
        if os.path.dirname(folder) == folder:
            return True
        folder = os.path.dirname(folder)


def _installed(plugin, api_server, folder):
    """The plugin file and a self-contained, world-readable kubeconfig (token, CA data) in ``folder``."""
    target = os.path.join(folder, "kubectl-aicr")
    shutil.copy2(plugin, target)
    kubeconfig = api_server.write_kubeconfig(os.path.join(folder, "kubeconfig"), user="bob@example.com",
                                             style="token", ca="data")
    os.chmod(kubeconfig, 0o644)
    return target, kubeconfig


@pytest.mark.parametrize("home", ["unset", "read-only"])
def test_runs_from_a_read_only_folder_without_a_usable_home_and_writes_nothing(plugin, api_server, tmp_path, home):
    folder = _world_readable_dir(tmp_path, "ro")
    try:
        target, kubeconfig = _installed(plugin, api_server, folder)
        empty = os.path.join(folder, "cwd")
        os.mkdir(empty)
        os.chmod(empty, 0o555)
        os.chmod(folder, 0o555)
        env = base_env(tmp_path)
        env["TMPDIR"] = empty
        if home == "unset":
            del env["HOME"]
        else:
            env["HOME"] = empty
        result = subprocess.run(plugin_command(target) + ["describe", api_server.fixture_name("install"),
                                                          "--kubeconfig", kubeconfig],
                                env=env, cwd=empty, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
        assert result.returncode == 0, result.stderr
        assert sorted(os.listdir(folder)) == ["cwd", "kubeconfig", "kubectl-aicr"]
        assert os.listdir(empty) == []
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
def test_runs_as_a_non_root_user(plugin, api_server, tmp_path):
    nobody = pwd.getpwnam("nobody")
    folder = _world_readable_dir(tmp_path, "nobody")
    try:
        target, kubeconfig = _installed(plugin, api_server, folder)
        env = base_env(tmp_path)
        env["HOME"] = "/nonexistent"
        env["PATH"] = env["PATH"]

        def drop():
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
        command = plugin_command(target)
        if not _others_can_run(command[0]):
            pytest.skip("%s is in a folder other users cannot enter, so an unprivileged user cannot run it"
                        % command[0])
        result = subprocess.run(command + ["describe", api_server.fixture_name("install"), "--kubeconfig",
                                           kubeconfig], env=env, cwd=folder, preexec_fn=drop,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        assert result.returncode == 0, result.stderr
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# Which interpreters compile the bytecode (build.py's docstring): --python / AICR_BUILD_PYTHONS, then
# $(pyenv root)/versions, then python3.Y on PATH (the release workflow's setup-python); pinned in .python-versions.

def _pinned_pythons():
    """{"X.Y": path} of the pinned interpreters under pyenv here, or skip."""
    import build
    pins = build.pinned()
    found = {"%d.%d" % v: os.path.join(PYENV_VERSIONS, pin, "bin", "python") for v, pin in sorted(pins.items())}
    missing = [path for path in found.values() if not os.access(path, os.X_OK)]
    if missing:
        pytest.skip("pinned interpreters missing under %s: %s" % (PYENV_VERSIONS, missing))
    return found


def _build(tmp_path, name, *args, **env):
    """Run build.py --output tmp_path/name with ``env`` over this environment (no AICR_BUILD_PYTHONS unless given)."""
    output = str(tmp_path / name)
    environ = {k: v for k, v in os.environ.items() if k != "AICR_BUILD_PYTHONS"}
    environ.update(env)
    result = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "--output", output] + list(args),
                            env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return result, output


def _same_bytes(a, b):
    with open(a, "rb") as one, open(b, "rb") as two:
        return one.read() == two.read()


def test_interpreters_given_explicitly_or_found_on_path_build_the_same_bytes_as_pyenv(tmp_path):
    """The release runner has no pyenv: interpreters named with --python, with AICR_BUILD_PYTHONS, or found as
    python3.Y on PATH give the default (pyenv) build's bytes, and the build names each one's full version."""
    pythons = _pinned_pythons()
    default, default_file = _build(tmp_path, "default")
    assert default.returncode == 0, default.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    on_path = tmp_path / "on-path"
    on_path.mkdir()
    for version, python in pythons.items():
        os.symlink(python, str(on_path / ("python" + version)))
    nowhere = dict(PYENV_ROOT=str(tmp_path / "no-pyenv"), PATH=str(empty))  # no pyenv, nothing on PATH
    options = [arg for version, python in pythons.items() for arg in ("--python", "%s=%s" % (version, python))]
    builds = {
        "options": _build(tmp_path, "options", *options, **nowhere),
        "environment": _build(tmp_path, "environment", AICR_BUILD_PYTHONS=" ".join(
            "%s=%s" % item for item in pythons.items()), **nowhere),
        "path": _build(tmp_path, "path", **dict(nowhere, PATH=str(on_path))),
    }
    pins = dict(("%d.%d" % tuple(int(p) for p in pin.split(".")[:2]), pin) for pin in open(
        os.path.join(ROOT, ".python-versions")).read().split())
    for label, (result, output) in builds.items():
        assert result.returncode == 0, (label, result.stderr)
        assert "note:" not in result.stdout and "WARNING" not in result.stdout, (label, result.stdout)
        for version, python in pythons.items():
            where = str(on_path / ("python" + version)) if label == "path" else python
            assert "compiled %s bytecode (magic " % version in result.stdout
            assert " with %s: CPython %s\n" % (where, pins[version]) in result.stdout, (label, result.stdout)
        assert _same_bytes(output, default_file), label


def test_a_release_refuses_an_interpreter_of_another_patch_version(tmp_path):
    """Bytecode and argparse's help may change between patch releases: a release with a different patch (or a
    missing interpreter) exits with the reason and writes nothing; a plain build says it is not reproducible."""
    pythons = _pinned_pythons()
    tree = tmp_path / "tree"
    tree.mkdir()
    _copy_sources(str(tree))
    pins = open(str(tree / ".python-versions")).read()
    pin_311 = next(line for line in pins.split() if line.startswith("3.11."))
    (tree / ".python-versions").write_text(pins.replace(pin_311, "3.11.999"))
    environ = {k: v for k, v in os.environ.items() if k != "AICR_BUILD_PYTHONS"}
    result = subprocess.run([sys.executable, "build.py", "--release"], cwd=str(tree), env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert result.returncode == 1, result.stdout
    assert "build.py: a release needs every pinned interpreter (.python-versions):" in result.stderr
    assert "Python 3.11 is %s at %s, but .python-versions pins 3.11.999" % (pin_311, pythons["3.11"]) \
        in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not (tree / "dist").exists() or not os.listdir(str(tree / "dist"))
    assert not (tree / "plugins").exists()
    plain = subprocess.run([sys.executable, "build.py"], cwd=str(tree), env=environ, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
    assert plain.returncode == 0, plain.stderr
    assert ("WARNING: Python 3.11 is %s at %s, but .python-versions pins 3.11.999 (bytecode and help texts may "
            "differ): this build is NOT reproducible" % (pin_311, pythons["3.11"])) in plain.stdout, plain.stdout
    # No interpreter for a version at all: a release refuses too (a plain build runs that version from source).
    empty = tmp_path / "empty"
    empty.mkdir()
    (tree / ".python-versions").write_text(pins)
    missing = subprocess.run([sys.executable, "build.py", "--release"] + [
        arg for version, python in pythons.items() if version != "3.9" for arg in ("--python", "%s=%s" % (
            version, python))], cwd=str(tree), env=dict(environ, PYENV_ROOT=str(empty), PATH=str(empty)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert missing.returncode == 1 and "no Python 3.9 (pinned " in missing.stderr, missing.stderr
    assert not (tree / "plugins").exists()


def test_an_interpreter_given_for_the_wrong_version_is_refused(tmp_path):
    pythons = _pinned_pythons()
    result, output = _build(tmp_path, "wrong", "--python", "3.12=%s" % pythons["3.11"])
    assert result.returncode == 1 and not os.path.exists(output)
    assert result.stderr.strip() == "build.py: %s is Python %s, not 3.12" % (
        pythons["3.11"], next(pin for pin in open(os.path.join(ROOT, ".python-versions")).read().split()
                                            if pin.startswith("3.11.")))
    result, output = _build(tmp_path, "bad", "--python", "3.7=%s" % pythons["3.11"])
    assert result.returncode == 1 and "is not X.Y=PATH for one of 3.8, 3.9" in result.stderr, result.stderr
