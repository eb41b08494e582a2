"""The environment that changes TLS under Python but not under kubectl (issue 20, the user's own rules and files 3).

Go's crypto/tls, under kubectl, reads none of OPENSSL_CONF, OPENSSL_CONF_INCLUDE, OPENSSL_ENGINES,
OPENSSL_MODULES and SSLKEYLOGFILE. Python's OpenSSL reads the first four when the process first loads it
(a configuration file can change the TLS versions and load engines, native code), and
``ssl.create_default_context`` writes TLS secrets to SSLKEYLOGFILE. The plugin's TLS ignores all of them
(start.hide_openssl_environment; rest.tls_context builds its own SSLContext), as kubectl's does, and
exec credential plugins still get them, as kubectl passes its whole environment.
"""

import ctypes
import json
import os
import shutil
import subprocess
import sys

import pytest

from kubectl_aicr import start
from tests.support.plugin import base_env, plugin_command

# A configuration that, read, leaves no TLS version the plugin accepts (it needs TLS 1.2 or newer).
NO_TLS12 = """openssl_conf = init
[init]
ssl_conf = ssl_sect
[ssl_sect]
system_default = sys_sect
[sys_sect]
MaxProtocol = TLSv1.1
"""
ENGINE = """openssl_conf = init
[init]
engines = engine_section
[engine_section]
spy = spy_section
[spy_section]
dynamic_path = %s
"""
SPY_C = r"""
#include <stdio.h>
__attribute__((constructor)) static void spy(void) {
    FILE *f = fopen("%s", "a");
    if (f) { fputs("native code ran\n", f); fclose(f); }
}
"""


def _describe(plugin, api_server, home, kubeconfig, rerun, **variables):
    """Run describe with ``variables`` set; ``rerun``: with an (empty) PYTHONPATH too, so the file starts
    again isolated and the variables go through that re-run."""
    env = dict(base_env(home), **variables)
    folder = os.path.join(str(home), "bin")  # python3 outside .venv: beside its pyvenv.cfg it would run as
    if not os.path.isdir(folder):            # the venv, whose .pth runs code (a re-run every time)
        os.makedirs(folder)
        os.symlink(os.path.realpath(os.path.join(sys.base_prefix, "bin", "python3")), os.path.join(folder, "python3"))
    env["PATH"] = folder + os.pathsep + env["PATH"]
    if rerun:
        empty = os.path.join(str(home), "empty")
        os.makedirs(empty, exist_ok=True)
        env["PYTHONPATH"] = empty
    return subprocess.run(plugin_command(plugin) + ["describe", api_server.fixture_name("awaiting-approval"),
                                                    "--kubeconfig", kubeconfig], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60)


@pytest.mark.e2e
@pytest.mark.parametrize("rerun", [False, True], ids=["first-start", "isolated-rerun"])
def test_an_openssl_conf_does_not_change_the_plugins_tls(plugin, api_server, kubeconfig_for, tmp_path, rerun):
    config = tmp_path / "openssl.cnf"
    config.write_text(NO_TLS12)
    result = _describe(plugin, api_server, tmp_path, kubeconfig_for(), rerun, OPENSSL_CONF=str(config))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Name:")


@pytest.mark.e2e
@pytest.mark.parametrize("rerun", [False, True], ids=["first-start", "isolated-rerun"])
def test_an_openssl_conf_loads_no_native_code_into_the_plugin(plugin, api_server, kubeconfig_for, tmp_path, rerun):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        pytest.skip("no C compiler to build the engine")
    noted = tmp_path / "noted"
    (tmp_path / "spy.c").write_text(SPY_C % noted)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(tmp_path / "spy.so"), str(tmp_path / "spy.c")],
                   check=True)
    config = tmp_path / "openssl.cnf"
    config.write_text(ENGINE % (tmp_path / "spy.so"))
    subprocess.run(["python3", "-I", "-S", "-c", "import ssl"], env=dict(base_env(tmp_path), OPENSSL_CONF=str(config)),
                   check=True)
    assert noted.read_text() == "native code ran\n"  # the engine is real: Python's ssl loads it
    noted.unlink()
    result = _describe(plugin, api_server, tmp_path, kubeconfig_for(), rerun, OPENSSL_CONF=str(config))
    assert result.returncode == 0, result.stderr
    assert not noted.exists()


@pytest.mark.e2e
@pytest.mark.parametrize("rerun", [False, True], ids=["first-start", "isolated-rerun"])
def test_sslkeylogfile_gets_no_tls_secret(plugin, api_server, kubeconfig_for, tmp_path, rerun):
    keys = tmp_path / "keys.log"
    result = _describe(plugin, api_server, tmp_path, kubeconfig_for(), rerun, SSLKEYLOGFILE=str(keys))
    assert result.returncode == 0, result.stderr
    assert not keys.exists()


@pytest.mark.e2e
@pytest.mark.parametrize("rerun", [False, True], ids=["first-start", "isolated-rerun"])
def test_an_exec_plugin_still_gets_the_openssl_and_keylog_variables(plugin, api_server, tmp_path, rerun):
    """As kubectl passes its environment to an exec credential plugin (client-go exec.go), so does the plugin."""
    seen = tmp_path / "seen"
    script = tmp_path / "credential.sh"
    script.write_text("#!/bin/sh\nprintf '%%s|%%s|%%s|%%s|%%s' \"$OPENSSL_CONF\" \"$OPENSSL_CONF_INCLUDE\" "
                      "\"$OPENSSL_ENGINES\" \"$OPENSSL_MODULES\" \"$SSLKEYLOGFILE\" > %s\n"
                      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
                      "\"status\":{\"token\":\"%s\"}}'\n" % (seen, api_server.token("alice@example.com")))
    script.chmod(0o755)
    config = api_server.kubeconfig(users=["alice@example.com"])
    config["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script),
                                           "interactiveMode": "Never"}}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(config))
    (tmp_path / "openssl.cnf").write_text(NO_TLS12)
    values = {"OPENSSL_CONF": str(tmp_path / "openssl.cnf"), "OPENSSL_CONF_INCLUDE": "/i", "OPENSSL_ENGINES": "/e",
              "OPENSSL_MODULES": "/m", "SSLKEYLOGFILE": str(tmp_path / "keys.log")}
    result = _describe(plugin, api_server, tmp_path, str(kubeconfig), rerun, **values)
    assert result.returncode == 0, result.stderr
    assert seen.read_text() == "|".join(values[name] for name in ("OPENSSL_CONF", "OPENSSL_CONF_INCLUDE",
                                                                 "OPENSSL_ENGINES", "OPENSSL_MODULES", "SSLKEYLOGFILE"))
    assert not (tmp_path / "keys.log").exists()


@pytest.mark.parametrize("name", start.OPENSSL_ENVIRONMENT)
def test_each_openssl_variable_is_hidden_from_openssl_and_kept_in_os_environ(name, monkeypatch):
    """What OpenSSL reads is the C environment (getenv): the variable is gone there, and os.environ (what
    exec credential plugins get) keeps it."""
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    monkeypatch.setenv(name, "/somewhere")
    assert libc.getenv(name.encode()) == b"/somewhere"
    start.hide_openssl_environment()
    assert libc.getenv(name.encode()) is None
    assert os.environ[name] == "/somewhere"


def test_openssl_loaded_at_start_with_such_a_variable_is_a_reason_to_start_again(monkeypatch):
    """In a first start where OpenSSL was loaded already (by the interpreter's own site), it read them then."""
    monkeypatch.setattr(start, "_code_running_pth", lambda site: None)  # this run's venv has one
    monkeypatch.delenv("OPENSSL_CONF", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "_ssl", object())
    assert "OPENSSL_CONF" not in start.environment_reasons()
    monkeypatch.setenv("OPENSSL_CONF", "/x.cnf")
    assert "OPENSSL_CONF" in start.environment_reasons()
