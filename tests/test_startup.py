"""Start-up of the built file: bytecode per CPython chosen by magic number, source for any other version,
pre-rendered help equal to argparse's, and immunity to the user's Python environment (issues 13 and 15)."""

import os
import subprocess
import sys
import zipfile

import pytest

import build
from tests.support.plugin import ROOT, base_env, plugin_command

pytestmark = pytest.mark.e2e

FOUND = build.interpreters()
# Every supported version in the main run; under `make test-pythons` (AICR_TEST_PYTHON) only the one it tests.
PYTHONS = [pytest.param(python, id="%d.%d" % version) if python else
           pytest.param(None, id="%d.%d" % version, marks=pytest.mark.skip("no Python %d.%d" % version))
           for version, python in sorted(FOUND.items())
           if not os.environ.get("AICR_TEST_PYTHON") or (python and os.path.realpath(python) ==
                                                         os.path.realpath(os.environ["AICR_TEST_PYTHON"]))]

# The interpreter this virtual environment was made from: a run of the plugin under the venv's own python would
# start again isolated (start.py: the venv's setuptools .pth runs code), leaving the probe behind.
BASE_PYTHON = os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2])

# Runs the built file as the interpreter does (runpy, the zip on sys.path), counting every compile() and
# reporting, at exit, the file of every kubectl_aicr module loaded.
PROBE = r"""
import atexit, builtins, runpy, sys
plugin = sys.argv[1]
compiled = []
real_compile = builtins.compile
def counting_compile(source, filename, *args, **kwargs):
    compiled.append(str(filename))
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
def report():
    files = sorted(set(getattr(m, "__file__", None) or "?" for n, m in list(sys.modules.items())
                       if n == "kubectl_aicr" or n.startswith("kubectl_aicr.")))
    sys.stderr.write("FILES %r\nCOMPILED %r\n" % (files, compiled))
atexit.register(report)
import os
_leave = os._exit
def leave(status):  # the built file ends with os._exit (start.leave), which runs no atexit hook
    report()
    sys.stderr.flush()  # block-buffered on 3.8 when it is a pipe
    _leave(status)
os._exit = leave
sys.argv = [plugin] + sys.argv[2:]
runpy.run_path(plugin, run_name="__main__")
"""


def probe(python, plugin, *args, env=None):
    """(result, module files, compiled file names) of running ``plugin args`` under ``python``."""
    result = subprocess.run([python, "-c", PROBE, plugin] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, universal_newlines=True, env=env or base_env(ROOT), timeout=60)
    report = dict(line.split(" ", 1) for line in result.stderr.splitlines() if line.startswith(("FILES", "COMPILED")))
    return result, eval(report["FILES"]), eval(report["COMPILED"])


def magic(python):
    return subprocess.run([python, "-c", "import importlib.util; print(importlib.util.MAGIC_NUMBER.hex())"],
                          stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()


@pytest.mark.parametrize("python", PYTHONS)
def test_each_supported_python_runs_its_own_bytecode(plugin, python, api_server, kubeconfig_for):
    folder = "%s/pyc/%s/kubectl_aicr/" % (plugin, magic(python))
    for args in (["describe", api_server.fixture_name("awaiting-approval"), "--kubeconfig", kubeconfig_for()],
                 ["approve", "--help"], ["version"]):
        result, files, compiled = probe(python, plugin, *args)
        assert result.returncode == 0, result.stderr
        assert files and all(f.startswith(folder) and f.endswith(".pyc") for f in files), files
        assert [c for c in compiled if "kubectl_aicr" in c] == [], compiled  # nothing of the package compiled
        assert [c for c in compiled if not c.endswith("__main__.py")] == [], compiled


def test_the_file_holds_unchecked_hash_pycs_for_every_version_found(plugin):
    with zipfile.ZipFile(plugin) as archive:
        names = set(archive.namelist())
        for version, python in FOUND.items():
            if python:
                data = archive.read("pyc/%s/kubectl_aicr/main.pyc" % magic(python))
                assert data[4:8] == b"\x01\x00\x00\x00"  # PEP 552: hash-based, unchecked (no timestamp)
    assert "__main__.py" in names and "kubectl_aicr/main.py" in names  # the source, for any other version


def test_an_unknown_python_runs_from_source_and_the_build_says_so(tmp_path, api_server, kubeconfig_for):
    this = "%d.%d" % sys.version_info[:2]
    other = [v for v, p in sorted(FOUND.items()) if p and v != sys.version_info[:2]]
    if not other:
        pytest.skip("no second CPython under pyenv")
    pyenv = tmp_path / "pyenv"
    (pyenv / "versions").mkdir(parents=True)
    os.symlink(os.path.dirname(os.path.dirname(FOUND[other[0]])), str(pyenv / "versions" / ("%d.%d.0" % other[0])))
    output = str(tmp_path / "kubectl-aicr")
    empty = tmp_path / "empty-path"
    empty.mkdir()  # no python3.Y on PATH either: only the pyenv folder above is looked at
    env = {k: v for k, v in os.environ.items() if k != "AICR_BUILD_PYTHONS"}
    built = subprocess.run([sys.executable, os.path.join(ROOT, "build.py"), "--output", output],
                           env=dict(env, PYENV_ROOT=str(pyenv), PATH=str(empty)), stdout=subprocess.PIPE,
                           universal_newlines=True, check=True).stdout
    assert ("note: no Python %s (pinned %s) found: not given by --python or AICR_BUILD_PYTHONS, none under "
            "%s/versions, no python%s on PATH: that version will run from source" % (
                this, build.pinned()[sys.version_info[:2]], pyenv, this)) in built, built
    result, files, compiled = probe(BASE_PYTHON, output, "describe", api_server.fixture_name("awaiting-approval"),
                                    "--kubeconfig", kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert "Phase:" in result.stdout and "AwaitingApproval" in result.stdout
    assert files and all(f.startswith(output + "/kubectl_aicr/") and f.endswith(".py") for f in files), files
    assert output + "/kubectl_aicr/main.py" in compiled
    with zipfile.ZipFile(output) as archive:
        assert not [n for n in archive.namelist() if n.startswith("pyc/") and magic(sys.executable) in n]


HELP_FORMS = [[], ["-h"], ["--help"], ["help"], ["describe", "--help"], ["approve", "-h"], ["help", "revoke"],
              ["help", "reproduce"], ["acknowledge", "--help"], ["version", "--help"], ["help", "help"]]
ARGPARSE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from kubectl_aicr import cli
try:
    cli.parse(sys.argv[2:])
except cli.HelpRequested as shown:
    sys.stdout.write(shown.text.rstrip("\n") + "\n")
"""


@pytest.mark.parametrize("python", PYTHONS)
def test_prerendered_help_is_what_argparse_prints(plugin, python):
    """Through a pipe or on an 80-column terminal the build's pre-rendered help is printed, without argparse."""
    for columns in (None, "80"):
        env = dict(base_env(ROOT), COLUMNS=columns) if columns else base_env(ROOT)
        env.pop("COLUMNS", None) if columns is None else None
        for argv in HELP_FORMS:
            result, files, _ = probe(python, plugin, *argv, env=env)
            assert result.returncode == 0 and "usage: kubectl aicr" in result.stdout
            assert not any(f.endswith("/cli.pyc") for f in files), "help loaded cli (argparse): %r" % files
            expected = subprocess.run([python, "-S", "-c", ARGPARSE, ROOT] + argv, stdout=subprocess.PIPE,
                                      universal_newlines=True, check=True, env=dict(base_env(ROOT), COLUMNS="80"))
            assert result.stdout == expected.stdout, argv


@pytest.mark.parametrize("columns", ["40", "200"])
def test_help_at_another_width_is_rendered_for_it(plugin, columns):
    """Another terminal width is not the pre-rendered one: argparse renders the help for it."""
    for argv in (["--help"], ["help", "approve"]):
        result, files, _ = probe(BASE_PYTHON, plugin, *argv, env=dict(base_env(ROOT), COLUMNS=columns))
        assert result.returncode == 0 and any(f.endswith("/cli.pyc") for f in files), files
        expected = subprocess.run([sys.executable, "-S", "-c", ARGPARSE, ROOT] + argv, stdout=subprocess.PIPE,
                                  universal_newlines=True, check=True, env=dict(base_env(ROOT), COLUMNS=columns))
        assert result.stdout == expected.stdout, argv


def test_completing_a_command_loads_no_transport(plugin):
    result, files, _ = probe(BASE_PYTHON, plugin, "__complete", "de")
    assert result.stdout == "describe\n:4\n"
    assert any(f.endswith("/commands/complete.pyc") for f in files), files  # the probe sees the package
    assert not any("/kubectl_aicr/kube/" in f for f in files), files  # no kubeconfig, clientcmd, rest


def _interpreter():
    """The interpreter that runs the built file in these tests (AICR_TEST_PYTHON, else this one)."""
    return os.environ.get("AICR_TEST_PYTHON") or os.path.join(sys.base_prefix, "bin", "python3")


@pytest.fixture
def hostile(tmp_path):
    """A folder of modules named like the standard library's, a sitecustomize and a user site-packages folder
    (under ``home``) with a usercustomize, each noting in ``noted`` that it ran, and every header it saw sent."""
    folder = tmp_path / "hostile"
    folder.mkdir()
    noted = tmp_path / "noted"
    spy = "open(%r, 'a').write('%%s ran\\n' %% __name__)\n" % str(noted)
    wrap = ("import builtins, sys\n_import = builtins.__import__\n"  # notes every request the plugin sends
            "def _spy(*args, **kwargs):\n"
            "    module = _import(*args, **kwargs)\n"
            "    http1 = sys.modules.get('kubectl_aicr.kube.http1')\n"
            "    if hasattr(http1, 'request_bytes') and not getattr(http1, 'spied', False):\n"
            "        http1.spied, real = True, http1.request_bytes\n"
            "        def request_bytes(*a, **k):\n"
            "            open(%r, 'a').write('header %%r\\n' %% (a,))\n"
            "            return real(*a, **k)\n"
            "        http1.request_bytes = request_bytes\n"
            "    return module\n"
            "builtins.__import__ = _spy\n" % str(noted))
    for name in ("json", "ssl", "base64", "hashlib", "socket", "argparse"):
        (folder / ("%s.py" % name)).write_text(spy + "raise ImportError('hijacked %s')\n" % name)
    (folder / "sitecustomize.py").write_text(spy + wrap + "print('SITECUSTOMIZE SAYS HELLO')\n")
    (folder / "startup.py").write_text(spy + "print('STARTUP SAYS HELLO')\n")
    home = tmp_path / "home"
    version = subprocess.run([_interpreter(), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    user_site = home / ".local" / "lib" / ("python" + version) / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "usercustomize.py").write_text(spy + wrap + "print('USERCUSTOMIZE SAYS HELLO')\n")
    return folder, noted, home


def _environ(home, **extra):
    """base_env, with PATH's python3 a link outside .venv (next to a pyvenv.cfg it would run as the venv, whose
    user site-packages are off)."""
    env = base_env(home)
    folder = os.path.join(str(home), "bin")
    if not os.path.isdir(folder):
        os.makedirs(folder)
        os.symlink(os.path.realpath(os.path.join(sys.base_prefix, "bin", "python3")), os.path.join(folder, "python3"))
    env["PATH"] = folder + os.pathsep + env["PATH"]
    env.update(extra)
    return env


# The *customize modules run once, in the interpreter's own start, before the file has control (no file can
# stop that under `#!/usr/bin/env python3`); the file then runs itself again isolated (exec: same process), so
# none of them sees a request, and what they printed to a pipe is dropped with that first process's buffers.
@pytest.mark.parametrize("variables", [
    {"PYTHONPATH": "{hostile}"},
    {"PYTHONPATH": "{hostile}", "PYTHONSTARTUP": "{hostile}/startup.py", "PYTHONINSPECT": "1"},
    {"PYTHONHOME": "{prefix}"},
    {"PYTHONUSERBASE": "{home}/.local", "PYTHONWARNINGS": "error"},
    {},  # only the user site-packages folder (in HOME) and the current folder
], ids=["pythonpath", "startup-inspect", "pythonhome", "userbase", "user-site-and-cwd"])
def test_the_users_python_environment_cannot_change_the_plugin(plugin, api_server, kubeconfig_for, hostile,
                                                               variables):
    folder, noted, home = hostile
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(_interpreter())))
    env = _environ(home, **{k: v.format(hostile=folder, home=home, prefix=prefix) for k, v in variables.items()})
    kubeconfig = kubeconfig_for()
    rollout = api_server.fixture_name("awaiting-approval")
    result = subprocess.run(plugin_command(plugin) + ["describe", rollout, "--kubeconfig", kubeconfig], env=env,
                            cwd=str(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Name:") and "AwaitingApproval" in result.stdout
    assert "HELLO" not in result.stdout + result.stderr and ">>>" not in result.stdout + result.stderr
    ran = noted.read_text().splitlines() if noted.exists() else []
    assert not [line for line in ran if line.startswith("header")]  # no user module saw a request or the token
    assert not [line for line in ran if line.split()[0] in ("json", "ssl", "base64", "hashlib", "socket")]
    assert all(ran.count(line) == 1 for line in ran), ran  # a *customize ran in the first start only


def test_an_error_keeps_its_exit_status_under_pythoninspect(run, hostile):
    folder, _, home = hostile
    result = run("describe", "x", "--kubeconfig", str(home / "missing"), env={"PYTHONINSPECT": "1"})
    assert result.returncode == 1 and result.stderr.startswith("error: ")
    assert ">>>" not in result.stdout + result.stderr


def test_no_reexec_without_such_variables(plugin, tmp_path):
    """The common case pays nothing: with a clean environment the first interpreter runs the plugin."""
    home = tmp_path / "home"
    home.mkdir()
    script = "import os, sys; sys.argv = [sys.argv[1], 'version']; os.execv = None; import runpy; " \
             "runpy.run_path(sys.argv[0], run_name='__main__')"
    python = plugin_command(plugin)[0] if len(plugin_command(plugin)) > 1 else BASE_PYTHON
    result = subprocess.run([python, "-s", "-c", script, plugin], env=_environ(home, PYTHONDONTWRITEBYTECODE="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert result.returncode == 0 and result.stdout.startswith("kubectl-aicr "), result.stderr


ARGVS = [["describe", "r"], ["--context", "c", "approve", "r", "--reason", "x"], ["describe"], ["describe", "R!"],
         ["describe", "r", "extra"], ["revoke", "r", "--bogus"], ["--kubeconfig=k", "reproduce", "--dir", "d"],
         ["acknowledge", "r", "--reason", "-x"], ["version", "x"], ["--bogus", "v", "describe", "r"],
         ["describe", "r", "--expires", "--help"], ["describe", "r", "--version"], ["describe", "r", "-h"],
         ["bogus"], ["describ", "r"], ["help", "describe"], ["--context", "describe", "approve", "r"],
         ["describe", "--context", "approve", "r"], ["reproduce", "sha256:ab", "--dir="], ["approve", "r", "--reason="]]


@pytest.mark.parametrize("argv", ARGVS)
def test_parsing_with_only_the_commands_subparser_is_parsing_with_all(argv, monkeypatch):
    from kubectl_aicr import cli
    from kubectl_aicr.errors import UsageError

    def outcome():
        try:
            return ("ok", cli.parse(list(argv)))
        except (UsageError, cli.HelpRequested) as exc:
            return (type(exc).__name__, str(exc))
    subset = outcome()
    monkeypatch.setattr(cli, "_command_word", lambda argv: None)
    assert subset == outcome()


@pytest.mark.e2e
def test_the_whole_output_arrives_though_the_plugin_ends_with_os_exit(run, api_server, kubeconfig_for):
    """start.leave ends the built file with os._exit (no interpreter finalization): a describe of several
    hundred kilobytes still arrives whole through a pipe, its last line included, and stderr's lines too
    (block-buffered on Python 3.8 when it is a pipe)."""
    rollout = api_server.fixture("awaiting-approval")
    steps = [{"release": "component-%04d" % i, "operation": "Upgrade", "assessment": "safe", "changesCRDs": False}
             for i in range(4000)]
    rollout["spec"]["steps"] = steps
    rollout["status"]["steps"] = [{"release": step["release"], "state": "Pending"} for step in steps]
    rollout["metadata"].pop("resourceVersion", None)
    api_server.put_object(rollout)
    result = run("describe", rollout["metadata"]["name"], kubeconfig=kubeconfig_for())
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) > 200000 and result.stdout.endswith("\n")
    assert sum("component-" in line for line in result.stdout.splitlines()) >= 4000
    assert result.stdout.splitlines()[-1].startswith("Decide on exactly this:"), result.stdout[-300:]
    failed = run("describe", "absent-rollout", kubeconfig=kubeconfig_for())
    assert failed.returncode == 1 and failed.stderr.startswith("error: ") and failed.stderr.endswith("\n")


# Code that runs at the interpreter's start (here an `encodings` package on PYTHONPATH, which every CPython
# imports from sys.path at start, before site) spies on every request the plugin sends and then breaks the
# isolated re-run in one way each. The plugin must refuse with one line, never carry on beside it.
SABOTAGE = {
    "exec-raises": "_os.execv = _fail",
    "exec-raises-other": "def _other(*a):\n    raise RuntimeError('no')\n_os.execv = _other",
    "exec-returns": "_os.execv = lambda *a: None",
    "no-executable": "_sys.executable = ''",
}
SPY = r"""
import builtins as _b, os as _os, sys as _sys
def _fail(*a):
    raise OSError(1, 'Operation not permitted')
_import = _b.__import__
def _spy(*args, **kwargs):
    module = _import(*args, **kwargs)
    http1 = _sys.modules.get('kubectl_aicr.kube.http1')
    if hasattr(http1, 'request_bytes') and not getattr(http1, 'spied', False):
        http1.spied, real = True, http1.request_bytes
        def request_bytes(*a, **k):
            data = real(*a, **k)
            open(%r, 'ab').write(data)
            return data
        http1.request_bytes = request_bytes
    return module
_b.__import__ = _spy
"""


def _shadowed_encodings(folder, noted, sabotage):
    """A copy of the interpreter's ``encodings`` package in ``folder`` that runs SPY and ``sabotage`` first."""
    stdlib = subprocess.run([_interpreter(), "-I", "-S", "-c", "import encodings, os; "
                             "print(os.path.dirname(encodings.__file__))"], stdout=subprocess.PIPE,
                            universal_newlines=True, check=True).stdout.strip()
    import shutil
    shutil.copytree(stdlib, str(folder / "encodings"), ignore=shutil.ignore_patterns("__pycache__"))
    init = folder / "encodings" / "__init__.py"
    init.write_text(SPY % str(noted) + sabotage + "\n" + init.read_text())


@pytest.mark.parametrize("sabotage", sorted(SABOTAGE))
def test_a_rerun_that_cannot_start_is_refused_not_run_beside_the_start_up_code(plugin, api_server,
                                                                              kubeconfig_for, tmp_path, sabotage):
    folder, noted = tmp_path / "hostile", tmp_path / "noted"
    folder.mkdir()
    _shadowed_encodings(folder, noted, SABOTAGE[sabotage])
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(plugin_command(plugin) + ["describe", api_server.fixture_name("awaiting-approval"),
                                                      "--kubeconfig", kubeconfig_for()],
                            env=_environ(home, PYTHONPATH=str(folder)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60)
    assert not noted.exists(), noted.read_bytes()[:300]  # no request, no token, went past that code
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot leave your Python environment behind "
                                                   "(PYTHONPATH): "), result.stderr
    assert "-I -S " in lines[0] and "nothing was run" in lines[0]


def test_a_run_under_dash_i_without_dash_s_is_not_the_isolated_run(plugin, api_server, kubeconfig_for, tmp_path):
    """``python -I`` still runs the site module: a virtual environment's .pth import line and its sitecustomize
    ran. Only -I with -S is the isolated run; this one starts again as that."""
    venv = tmp_path / "venv"
    subprocess.run([_interpreter(), "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path("
                               "'purelib'))"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    noted = tmp_path / "noted"
    with open(os.path.join(packages.strip(), "spy.py"), "w") as handle:
        handle.write(SPY % str(noted))
    with open(os.path.join(packages.strip(), "spy.pth"), "w") as handle:
        handle.write("import spy\n")
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run([str(venv / "bin" / "python"), "-I", plugin, "describe",
                             api_server.fixture_name("awaiting-approval"), "--kubeconfig", kubeconfig_for()],
                            env=_environ(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Name:")
    assert not noted.exists(), noted.read_bytes()[:300]


CRAFT_PYC = r"""
import importlib.util, json, marshal, os, sys
source, noted = json.__file__, sys.argv[1]
code = compile("open(%r, 'a').write('planted bytecode ran\\n')\n" % noted + open(source).read(), source, "exec")
info = os.stat(source)
target = importlib.util.cache_from_source(source)  # under PYTHONPYCACHEPREFIX
os.makedirs(os.path.dirname(target), exist_ok=True)
with open(target, "wb") as handle:  # a timestamp pyc claiming the real source's mtime and size (PEP 552 flags 0)
    handle.write(importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") +
                 (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") +
                 (info.st_size & 0xFFFFFFFF).to_bytes(4, "little") + marshal.dumps(code))
"""


def test_bytecode_planted_under_pythonpycacheprefix_never_runs(plugin, api_server, kubeconfig_for, tmp_path):
    """PYTHONPYCACHEPREFIX is where the interpreter reads the standard library's cached bytecode from: a .pyc
    there stamped with the source's time and size runs in place of the module. It is a reason to start again
    isolated (-I ignores it), not a harmless variable."""
    prefix, noted, home = tmp_path / "pycache", tmp_path / "noted", tmp_path / "home"
    home.mkdir()
    env = _environ(home, PYTHONPYCACHEPREFIX=str(prefix))
    subprocess.run([_interpreter(), "-c", CRAFT_PYC, str(noted)], env=env, check=True)
    subprocess.run([_interpreter(), "-c", "import json"], env=env, check=True)
    assert noted.read_text() == "planted bytecode ran\n"  # the planted file is real: a plain start runs it
    noted.unlink()
    result = subprocess.run(plugin_command(plugin) + ["describe", api_server.fixture_name("awaiting-approval"),
                                                      "--kubeconfig", kubeconfig_for()], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            universal_newlines=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Name:")
    assert not noted.exists()
