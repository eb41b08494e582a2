"""The plugin against the real kubectl at what it replaces, measured side by side in one run (issue 15).

Each figure is a ratio plugin / kubectl over pairs run A B A B (the two commands alternate, so a noisy
neighbour hits both alike): the median of the per-pair ratios, with their range, beside the goal.

1. ``kubectl-aicr --help`` against ``kubectl version --client``            goal <= 0.5
2. describe with a 2 MB, 1,000-context kubeconfig against
   ``kubectl get --raw`` of the rollout with the same file                  goal <= 0.8
3. describe (rollout + report) against the two ``kubectl get --raw`` calls
   it replaces, with the test server's one-context kubeconfig               goal <= 0.6

The plugin runs through its own ``#!/usr/bin/env python3`` line, with ``python3`` on PATH being, in
turn, (a) a clean virtual environment of this interpreter (empty site-packages: what a user's machine
sees) and (b) the interpreter itself, whose site-packages may hold .pth files (certifi, a sandbox's CA
hook...) that every Python start pays. Goals are judged on (a); (b) is printed beside it.

Also: the cost of the isolation re-exec (``__main__.py`` runs ``python -I -S`` again when PYTHONPATH and the
like are set), describe's own time (decode, verify, render; no network) at 500, 5,000 and 10,000 steps,
and peak memory (max RSS) of describe beside kubectl's. The bench never fails the build.
"""

import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import describe_bench  # noqa: E402
import kubeconfig_bench  # noqa: E402
from kubectl_aicr.aicr import objects  # noqa: E402
from kubectl_aicr.commands import describe  # noqa: E402
from tests.support.apiserver import APIServer  # noqa: E402

PLUGIN = os.path.join(ROOT, "dist", "kubectl-aicr")
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")
PAIRS = 15
GOALS = {"help": 0.5, "bigconfig": 0.8, "describe": 0.6}


def run_once(argv, env):
    """(seconds, max RSS in KiB, CPU seconds: user + system) of one run of ``argv``, output discarded."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status
    if process.returncode != 0:
        raise RuntimeError("%s exited %s" % (" ".join(argv[:3]), process.returncode))
    return elapsed, usage.ru_maxrss, usage.ru_utime + usage.ru_stime


def paired(a, b, env_a, env_b=None, pairs=PAIRS):
    """Run ``a`` and ``b`` alternately ``pairs`` times (after one warm-up each): a dict of figures."""
    run_once(a, env_a)
    run_once(b, env_b or env_a)
    times_a, times_b, ratios, rss_a, rss_b, cpu_ratios = [], [], [], [], [], []
    for _ in range(pairs):
        ta, ma, ca = run_once(a, env_a)
        tb, mb, cb = run_once(b, env_b or env_a)
        times_a.append(ta)
        times_b.append(tb)
        ratios.append(ta / tb)
        rss_a.append(ma)
        rss_b.append(mb)
        cpu_ratios.append(ca / cb if cb else float("inf"))
    return {"a": statistics.median(times_a) * 1000, "b": statistics.median(times_b) * 1000,
            "ratio": statistics.median(ratios), "low": min(ratios), "high": max(ratios),
            "best_a": min(times_a) * 1000, "best_b": min(times_b) * 1000,
            "cpu": statistics.median(cpu_ratios), "rss_a": max(rss_a) / 1024, "rss_b": max(rss_b) / 1024}


def line(label, figures, goal):
    verdict = "MET" if figures["ratio"] <= goal else "NOT MET"
    return ("  %-44s %6.1f ms vs %6.1f ms   ratio %.2f (range %.2f-%.2f)   goal <= %.1f  %s\n"
            "  %-44s best %.1f vs %.1f ms (ratio %.2f); CPU time ratio %.2f (kubectl's counts its GC threads)"
            % (label, figures["a"], figures["b"], figures["ratio"], figures["low"], figures["high"], goal, verdict,
               "", figures["best_a"], figures["best_b"], figures["best_a"] / figures["best_b"], figures["cpu"]))


def interpreter_envs(folder):
    """{label: environment} whose PATH's python3 is (a) a clean venv of this Python, (b) this Python itself."""
    base = os.path.join(sys.base_prefix, "bin", "python3")
    venv = os.path.join(folder, "clean-venv")
    subprocess.run([base, "-m", "venv", "--without-pip", venv], check=True)
    plain = os.path.join(folder, "plain-bin")
    os.mkdir(plain)
    os.symlink(base, os.path.join(plain, "python3"))
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith("PYTHON") and not k.lower().endswith("_proxy") and k != "KUBECONFIG"}
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return [("clean venv (a user's machine)", dict(keep, PATH=os.path.join(venv, "bin") + os.pathsep + path)),
            ("this Python, its site-packages .pth files", dict(keep, PATH=plain + os.pathsep + path))]


def ratios(folder, label, env):
    print("python3 = %s" % label)
    figures = {}
    figures["help"] = paired([PLUGIN, "--help"], [KUBECTL, "version", "--client"], env)
    print(line("kubectl-aicr --help / kubectl version --client", figures["help"], GOALS["help"]))
    complete = paired([PLUGIN, "__complete", "de"], [KUBECTL, "version", "--client"], env)
    print("  %-44s %6.1f ms" % ("(kubectl-aicr __complete de)", complete["a"]))
    with APIServer(fixtures_dir=os.path.join(ROOT, "tests", "fixtures")) as server:
        rollout = server.fixture_name("awaiting-approval")
        report = server.fixture("report-candidate")["metadata"]["name"]
        small = server.write_kubeconfig(os.path.join(folder, "small-kubeconfig"))
        big = os.path.join(folder, "big-kubeconfig")
        size, _ = kubeconfig_bench.make_kubeconfig(server, big)
        rollout_path = "/apis/operator.aicr.run/v1alpha1/runtimerollouts/%s" % rollout
        report_path = "/api/v1/namespaces/aicr-system/configmaps/%s" % report
        figures["bigconfig"] = paired([PLUGIN, "describe", rollout, "--kubeconfig", big],
                                      [KUBECTL, "get", "--raw", rollout_path, "--kubeconfig", big], env)
        print(line("describe / get --raw, %.1f MB kubeconfig" % (size / 1e6), figures["bigconfig"],
                   GOALS["bigconfig"]))
        two_gets = ["sh", "-c", '"$0" get --raw "$1" --kubeconfig "$3" && "$0" get --raw "$2" --kubeconfig "$3"',
                    KUBECTL, rollout_path, report_path, small]
        figures["describe"] = paired([PLUGIN, "describe", rollout, "--kubeconfig", small], two_gets, env)
        print(line("describe / the two kubectl get --raw", figures["describe"], GOALS["describe"]))
        isolated = paired([PLUGIN, "describe", rollout, "--kubeconfig", small],
                          [PLUGIN, "describe", rollout, "--kubeconfig", small], dict(env, PYTHONPATH=folder), env)
        helped = paired([PLUGIN, "--help"], [PLUGIN, "--help"], dict(env, PYTHONPATH=folder), env)
        print("  isolation re-exec (PYTHONPATH set -> python -I -S again): --help +%.1f ms, describe +%.1f ms"
              % (helped["a"] - helped["b"], isolated["a"] - isolated["b"]))
        print("  peak memory (max RSS): describe %.0f MB, kubectl get --raw %.0f MB"
              % (figures["describe"]["rss_a"], figures["bigconfig"]["rss_b"]))
    return figures


# What describe loads from the standard library (any HTTPS + JSON client here needs most of it); the floor
# under the plugin's own modules. http.client, typing, argparse, hashlib and urllib.parse are no longer in it.
CORE_SET = "ssl, socket, json, base64, datetime, threading, signal, re"


def floor(folder, env):
    """Where describe's time goes, step by step (median of runs): the floor under the plugin's code."""
    empty = os.path.join(folder, "empty")
    os.mkdir(empty)
    with open(os.path.join(empty, "__main__.py"), "w") as handle:
        handle.write("import sys\nsys.exit(0)\n")
    empty_zip = os.path.join(folder, "empty.pyz")
    subprocess.run([sys.executable, "-m", "zipapp", empty, "-o", empty_zip], check=True)
    imports = ("import sys, importlib.util; sys.path[:0] = [sys.argv[1] + '/pyc/' + importlib.util.MAGIC_NUMBER.hex(),"
               " sys.argv[1]]; import kubectl_aicr.main, kubectl_aicr.cli, kubectl_aicr.commands.describe")
    with APIServer(fixtures_dir=os.path.join(ROOT, "tests", "fixtures")) as server:
        rollout = server.fixture_name("awaiting-approval")
        small = server.write_kubeconfig(os.path.join(folder, "floor-kubeconfig"))
        steps = [("python3 -c pass (interpreter start)", ["python3", "-c", "pass"]),
                 ("python3 -I -S -c pass (no site)", ["python3", "-I", "-S", "-c", "pass"]),
                 ("an empty zipapp (+ runpy, importlib.util)", ["python3", empty_zip]),
                 ("python3 -c 'import <describe's stdlib set>'", ["python3", "-c", "import " + CORE_SET]),
                 ("python3 -c 'import the plugin's modules'", ["python3", "-c", imports, PLUGIN]),
                 ("kubectl-aicr describe (all of it)", [PLUGIN, "describe", rollout, "--kubeconfig", small])]
        print("  the floor, step by step (wall median / CPU median, ms):")
        for label, argv in steps:
            runs = [run_once(argv, env) for _ in range(PAIRS)]
            print("    %-48s %6.1f / %6.1f" % (label, statistics.median(r[0] for r in runs) * 1000,
                                               statistics.median(r[2] for r in runs) * 1000))
        print("    (describe's stdlib set: %s)" % CORE_SET)


def own_time(n):
    """(best seconds, Python heap peak in bytes) of describe's own work on an ``n``-step rollout."""
    best = describe_bench.own_time(n)
    rollout_bytes, configmap_bytes, digest = describe_bench.big_rollout(n)
    now = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
    tracemalloc.start()
    describe.render(objects.rollout(json.loads(rollout_bytes)),
                    objects.verify_report(json.loads(configmap_bytes), digest, "cm"), "aicr-system", now)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, peak


def scaling():
    figures = [(n,) + own_time(n) for n in (500, 5000, 10000)]
    print("describe's own time (decode, verify, render; no network; best of 5), Python %d.%d:" % sys.version_info[:2])
    for n, seconds, peak in figures:
        print("  %6d steps  %7.1f ms  %6.1f us/step  Python heap peak %5.1f MB" % (
            n, seconds * 1000, seconds / n * 1e6, peak / 1e6))
    linear = figures[2][1] <= 2.6 * figures[1][1]
    print("  goal: linear to 10,000 steps (10,000 within 2.6x of 5,000)  %s" % ("MET" if linear else "NOT MET"))


def main():
    print("load average before: %.1f %.1f %.1f (2 CPUs: above ~1 the figures are noisy)" % os.getloadavg())
    if not (os.access(PLUGIN, os.X_OK) and os.access(KUBECTL, os.X_OK)):
        print("dist/kubectl-aicr or .venv/bin/kubectl is missing: run make build (make venv)")
        return 0
    folder = tempfile.mkdtemp(prefix="aicr-ratios-bench-")
    try:
        print("%d pairs each, A B A B; ratio = plugin / kubectl, median of the pairs (range)" % PAIRS)
        for index, (label, env) in enumerate(interpreter_envs(folder)):
            ratios(folder, label, env)
            if index == 0:
                floor(folder, env)
        scaling()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
