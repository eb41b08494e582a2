"""The start of a run from the built file, after ``__main__.py`` checked the Python version and put this
interpreter's bytecode first on sys.path (this module is loaded from that bytecode, so it costs no compile).

- It leaves the user's Python environment behind: when the interpreter is not isolated and the environment
  could change what runs (a PYTHON* variable other than the harmless ones in :data:`HARMLESS`, a user
  site-packages folder on sys.path, a sitecustomize or usercustomize module from outside the interpreter's
  own standard library), it runs itself again as ``python -I -S FILE ARGS`` (same interpreter, same
  process id, through exec): no PYTHONPATH, PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT, PYTHONUSERBASE, user or
  system site-packages, *customize module or current folder in that run. It fails closed: when that run
  cannot start (no sys.executable, exec failing, or exec returning because start-up code replaced it) the
  plugin refuses with one ``error:`` line, exit status 1 (:func:`_cannot`), and never carries on in the
  process that code shares. The isolated run is known by its flags (``-I`` and ``-S``, :func:`isolated`),
  never by an environment variable the user could set.
- A ``.pth`` file with an ``import`` line in a virtual environment's site-packages ran code at the
  interpreter's start: the run starts again isolated (a ``.pth`` that only adds folders does not, nor
  does a clean virtual environment; the interpreter's own site-packages belong to it as installed).
- A sitecustomize in the standard library's own folder (Debian's and Ubuntu's python3 ship one, the apport
  hook) belongs to the interpreter as installed, like the rest of its standard library: it is no reason
  to start again (it would cost every run a second interpreter start on those systems).
- In the isolated run PYTHONIOENCODING still chooses the streams' encoding (:func:`keep_stream_encoding`).
"""

import os
import sys

# Variables that neither run code, nor add a folder to sys.path, nor print (Docker images set the first two).
# PYTHONIOENCODING and PYTHONUTF8 only choose the terminal's encoding; an isolated run keeps them
# (keep_stream_encoding, -X utf8). Not PYTHONPYCACHEPREFIX: the standard library's bytecode is read from
# there, and a .pyc stamped with its source's time and size runs in place of the module.
HARMLESS = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONNOUSERSITE", "PYTHONSAFEPATH",
            "PYTHONIOENCODING", "PYTHONUTF8")

# What OpenSSL itself reads from the (C) environment when this process first loads it (ssl, hashlib): a
# configuration file (OPENSSL_CONF, its relative includes from OPENSSL_CONF_INCLUDE), which can set the TLS
# versions and ciphers and load engines and providers, native code, from OPENSSL_ENGINES and OPENSSL_MODULES
# (OpenSSL 3.0 crypto/conf, crypto/engine, crypto/provider_core). Go's crypto/tls, under kubectl, reads none
# of them: hidden from the plugin's OpenSSL (hide_openssl_environment), kept for its exec plugins.
OPENSSL_ENVIRONMENT = ("OPENSSL_CONF", "OPENSSL_CONF_INCLUDE", "OPENSSL_ENGINES", "OPENSSL_MODULES")


def _in_standard_library(path):
    """True when the file ``path`` sits in the interpreter's standard library folder (where ``os`` is)."""
    stdlib = os.path.dirname(getattr(os, "__file__", "") or "")
    return bool(path and stdlib) and os.path.dirname(os.path.abspath(path)) == os.path.abspath(stdlib)


def environment_reasons():
    """What, in this process's start, the user's Python environment could have changed (empty: nothing)."""
    reasons = [] if sys.flags.ignore_environment else sorted(
        name for name in os.environ if name.startswith("PYTHON") and name not in HARMLESS)
    site = sys.modules.get("site")
    user_site = getattr(site, "USER_SITE", None) if getattr(site, "ENABLE_USER_SITE", False) else None
    if user_site and user_site in sys.path:
        reasons.append("user site-packages")
    reasons += [name for name in ("sitecustomize", "usercustomize") if _customized(name)]
    pth = _code_running_pth(site)
    if pth:
        reasons.append(pth)
    if "_ssl" in sys.modules or "_hashlib" in sys.modules:  # OpenSSL loaded at start: it read them then
        reasons += [name for name in OPENSSL_ENVIRONMENT if name in os.environ]
    return reasons


def _customized(name):
    """True when a ``name`` module (sitecustomize, usercustomize) ran, or could have, from outside the
    standard library's folder: loaded (in sys.modules), or found on sys.path (one that raised is no longer
    in sys.modules, but its hooks may stay installed)."""
    module = sys.modules.get(name)
    if module is not None and not _in_standard_library(getattr(module, "__file__", None)):
        return True
    try:  # where the file really is (a module may set its own __file__ to anything)
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name)
    except (ImportError, ValueError, OSError):
        return module is not None
    origin = getattr(spec, "origin", None) if spec is not None else None
    if not origin:
        return spec is not None or (module is not None and getattr(module, "__file__", None) is None)
    return not _in_standard_library(origin)


def _code_running_pth(site):
    """In a virtual environment, the first ``.pth`` file with an ``import`` line (code the site module ran at
    start-up) in its site-packages folders on sys.path, as ``"FOLDER/NAME.pth"``; None when there is none
    (a clean virtual environment has none) or outside one: the site-packages of the interpreter as
    installed are part of it, as its standard library is."""
    if site is None or not hasattr(site, "getsitepackages") or sys.prefix == sys.base_prefix:
        return None
    prefix = os.path.join(os.path.abspath(sys.prefix), "")
    for folder in site.getsitepackages():
        if folder not in sys.path or not os.path.abspath(folder).startswith(prefix):
            continue
        try:
            names = sorted(name for name in os.listdir(folder) if name.endswith(".pth"))
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as handle:
                    data = handle.read()  # whole: site.py reads every line
            except OSError:
                continue
            if data.startswith(b"\xef\xbb\xbf"):  # site.py (3.13) decodes utf-8-sig: a BOM hides nothing
                data = data[3:]
            if any(line.startswith((b"import ", b"import\t")) for line in data.splitlines()):
                return path
    return None


def isolated():
    """True in a run that nothing of the user's Python environment reached: started with ``-I`` (no PYTHON*
    variable, no user site-packages, no current folder) and ``-S`` (no site module: no .pth file, no
    *customize module). The run :func:`isolate` starts is one; ``-I`` alone is not (the site module still
    ran the site-packages' .pth files and a sitecustomize there). No environment variable marks it: what
    the environment says cannot skip the isolation."""
    return bool(sys.flags.isolated and sys.flags.no_site)


def isolate(archive):
    """Run ``archive`` again under ``python -I -S`` (exec: the same process) when :func:`environment_reasons`
    gives any; returns only when it gives none or the run is :func:`isolated` already. Fails closed: when the
    interpreter cannot be run again (no ``sys.executable``, exec failing, or exec returning, which the real
    one never does: code of the user's start-up replaced it), the run ends with one ``error:`` line and exit
    status 1 (:func:`_cannot`) and never carries on where that code runs."""
    if isolated():
        return
    reasons = environment_reasons()
    if not reasons:
        return
    executable = sys.executable
    if not executable:
        _cannot(reasons, "the path of this Python interpreter is unknown (sys.executable is empty)", archive)
    utf8 = ["-X", "utf8=%d" % sys.flags.utf8_mode] if os.environ.get("PYTHONUTF8") else []
    try:
        os.execv(executable, [executable, "-I", "-S"] + utf8 + [archive] + sys.argv[1:])
    except KeyboardInterrupt:  # Ctrl-C before the exec: the same line as later on
        refuse("interrupted", 130)
    except BaseException as exc:  # OSError from exec, or anything start-up code put in its place
        _cannot(reasons, "cannot run %s again: %s" % (executable, getattr(exc, "strerror", None) or exc), archive)
    _cannot(reasons, "exec of %s returned (something at the interpreter's start replaced os.execv)" % executable,
            archive)


def _cannot(reasons, why, archive):
    """:func:`refuse`: the isolated run of ``archive`` could not start, for ``why``; ``reasons`` asked for it."""
    refuse("cannot leave your Python environment behind (%s): %s; nothing was run: remove those, or run %s -I -S %s"
           % (", ".join(reasons), why, sys.executable or "python3", archive))


def refuse(message, status=1):
    """End the run with ``error: <message>`` (one line, escaped) and exit ``status``; never returns: the plugin
    must not run in a process that the user's start-up code shares."""
    try:
        from .output import error
        error(message)
    except BaseException:  # the output module could not load in this process: still one line, escaped
        try:
            sys.stderr.write("error: %s\n" % ascii(message)[1:-1])
        except BaseException:
            pass
    leave(status)
    raise SystemExit(status)  # os._exit replaced too: still no carrying on


def keep_stream_encoding():
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


def hide_openssl_environment():
    """Unset :data:`OPENSSL_ENVIRONMENT` in the C environment, the one OpenSSL reads, before anything of this
    process loads OpenSSL: the plugin's TLS is what kubectl's is, whatever those say, and no configuration
    file loads native code into it. ``os.environ`` keeps them (``os.unsetenv`` leaves it as it is), so an exec
    credential plugin still gets them, as kubectl passes its whole environment (client-go ``exec.go``)."""
    for name in OPENSSL_ENVIRONMENT:
        if name in os.environ:
            os.unsetenv(name)


def run(archive):
    """Start the plugin from the built file ``archive`` (None when run from the source): isolate, then
    :func:`kubectl_aicr.main.main`; never returns (from the built file :func:`leave`, else SystemExit, with
    main's status)."""
    if archive:
        isolate(sys.argv[0] if os.path.exists(sys.argv[0]) else archive)
        keep_stream_encoding()
    hide_openssl_environment()
    try:
        from .main import main
    except KeyboardInterrupt:  # Ctrl-C while the modules load: the same line as later on
        sys.stderr.write("error: interrupted\n")
        sys.exit(130)
    status = main()
    if archive:
        leave(status)
    sys.exit(status)


def leave(status):
    """End the process with ``status`` now, without the interpreter's finalization (freeing every module
    costs a start of describe ~5 ms, measured on CPython 3.11; issue 15). Safe here because by the time
    main returns, everything of the plugin's is done: files are closed by their ``with`` blocks, private
    credential files are removed by ``finally`` blocks, child processes are reaped, the only threads are
    daemon timers and name lookups, no ``atexit`` hook is registered, and main has flushed stdout (or
    pointed it at /dev/null when that failed). Both streams are flushed once more before leaving."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status if isinstance(status, int) else 0 if status is None else 1)  # as sys.exit reads it
