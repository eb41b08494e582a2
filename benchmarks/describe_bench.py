"""Figures for describe and the other commands, each measured in one run, printed beside their anchors.

- cold ``kubectl-aicr --help`` against ``kubectl version --client`` (goal: not slower);
- describe of a rollout with N steps and an N-component report, the plugin's own time
  (decode, read, verify, render; no network) at N = 100, 250, 500 (goal: under 150 ms at
  500, growing linearly);
- requests and TLS handshakes per command against the test API server (goal: describe
  in at most 3 requests on one connection);
- describe against the ``kubectl get`` calls that show the same objects, same server.
"""

import datetime
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kubectl_aicr.aicr import objects  # noqa: E402
from kubectl_aicr.commands import describe  # noqa: E402
from tests.support.apiserver import APIServer  # noqa: E402

PLUGIN = os.path.join(ROOT, "dist", "kubectl-aicr")
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")
REPEAT = 7


def _median_seconds(command, env=None, repeat=REPEAT):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _python_env():
    """PATH with a clean venv of the real interpreter first, so the file's `env python3` line skips any pyenv
    shim and the base interpreter's site-packages .pth files (a user's python3 has none of this machine's)."""
    folder = os.path.join(tempfile.mkdtemp(prefix="aicr-bench-"), "venv")
    subprocess.run([os.path.join(sys.base_prefix, "bin", "python3"), "-m", "venv", "--without-pip", folder],
                   check=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return dict(environ, PATH=os.path.join(folder, "bin") + os.pathsep + os.environ.get("PATH", ""))


def cold_start():
    env = _python_env()
    ours = _median_seconds([PLUGIN, "--help"], env)
    theirs = _median_seconds([KUBECTL, "version", "--client"], env)
    python = _median_seconds(["python3", "-c", "pass"], env)
    print("cold start      kubectl-aicr --help %6.0f ms   kubectl version --client %6.0f ms   goal: not slower  %s"
          % (ours * 1000, theirs * 1000, "MET" if ours <= theirs else "NOT MET"))
    print("                (of which the interpreter alone, python3 -c pass: %.0f ms; its site-packages .pth files"
          " count there)" % (python * 1000))


def big_rollout(n):
    report = {"from": "cluster", "to": "oci://bundles:v2", "deployer": "argocd", "summary": {"components": n,
                                                                                             "failing": n // 3},
              "components": [{"component": "component-%04d" % i, "change": "version", "from": "1.%d.0" % i,
                              "to": "1.%d.1" % i, "verdict": ("safe", "manual", "blocked")[i % 3],
                              "notes": "1 patch", "explanation": "recorded: the record covering the move",
                              "precondition": "No drain is in progress." if i % 3 else "",
                              "steps": [{"id": "step-%d" % i, "description": "Do the thing.", "reason": "why"}]
                              if i % 3 == 1 else [], "breaking": False, "downgrade": False, "failsRun": i % 3 == 2}
                             for i in range(n)]}
    text = json.dumps(report)
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    rollout = {"metadata": {"name": "rollout-big-1", "uid": "u", "resourceVersion": "9"},
               "spec": {"runtimeRef": {"name": "cluster", "uid": "c"},
                        "from": {"desiredStateDigest": "sha256:" + "1" * 64},
                        "to": {"desiredStateDigest": "sha256:" + "2" * 64}, "deadline": "2026-11-30T12:00:00Z",
                        "approvalRequired": True, "startingInventory": {"releases": n, "digest": "sha256:" + "3" * 64},
                        "assessment": {"digest": digest},
                        "steps": [{"release": "component-%04d" % i, "operation": "Upgrade", "assessment": "safe",
                                   "changesCRDs": i % 2 == 0} for i in range(n)],
                        "transitionRecords": [{"release": "component-%04d" % i, "from": "1", "to": "2",
                                               "verdict": "manual", "precondition": "p",
                                               "steps": [{"id": "s", "description": "d", "reason": "r",
                                                          "when": "PreApply"}]} for i in range(0, n, 10)]},
               "status": {"phase": "AwaitingApproval",
                          "steps": [{"release": "component-%04d" % i, "state": "Pending"} for i in range(n)]}}
    configmap = {"metadata": {"name": objects.assessment_configmap_name(digest)}, "data": {"report.json": text}}
    return json.dumps(rollout).encode(), json.dumps(configmap).encode(), digest


def own_time(n):
    rollout_bytes, configmap_bytes, digest = big_rollout(n)
    now = datetime.datetime(2026, 11, 29, tzinfo=datetime.timezone.utc)
    best = None
    for _ in range(5):
        started = time.perf_counter()
        rollout = objects.rollout(json.loads(rollout_bytes))
        verified = objects.verify_report(json.loads(configmap_bytes), digest, "cm")
        lines = describe.render(rollout, verified, "aicr-system", now)
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    assert verified.problem is None and len(lines) > n
    return best


def describe_scaling():
    figures = [(n, own_time(n)) for n in (100, 250, 500)]
    per_item = [t / n * 1e6 for n, t in figures]
    text = "   ".join("N=%d %5.1f ms" % (n, t * 1000) for n, t in figures)
    linear = figures[2][1] <= 2.5 * figures[1][1]  # twice the items: linear is ~2x, quadratic ~4x
    print("describe own    %s   per item %s us   goal: <150 ms at N=500, N=500 within 2.5x of N=250  %s" % (
        text, "/".join("%.0f" % p for p in per_item), "MET" if figures[-1][1] < 0.150 and linear else "NOT MET"))


def requests_per_command():
    with APIServer(fixtures_dir=os.path.join(ROOT, "tests", "fixtures")) as server:
        folder = tempfile.mkdtemp(prefix="aicr-bench-")
        kubeconfig = server.write_kubeconfig(os.path.join(folder, "kc"))
        env = dict(_python_env(), KUBECONFIG=kubeconfig)
        upgrade = server.fixture_name("awaiting-approval")
        commands = [("describe", ["describe", upgrade]),
                    ("approve", ["approve", upgrade, "--reason", "bench"]),
                    ("revoke", ["revoke", upgrade, "--reason", "bench"]),
                    ("acknowledge", ["acknowledge", server.fixture_name("awaiting-acknowledgement")]),
                    ("reproduce", ["reproduce", "--dir", os.path.join(folder, "r")])]
        for label, args in commands:
            server.clear_requests()
            subprocess.run([PLUGIN] + args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seen = server.requests
            connections = len({r.connection_id for r in seen})
            goal = "   goal: <=3 requests, 1 connection  %s" % (
                "MET" if len(seen) <= 3 and connections == 1 else "NOT MET") if label == "describe" else ""
            print("requests        %-12s %d requests on %d connection(s)%s" % (label, len(seen), connections, goal))
        server.restore(server.snapshot())
        ours = _median_seconds([PLUGIN, "describe", upgrade], env)
        kubectl_env = dict(env)
        report = server.fixture("report-candidate")["metadata"]["name"]
        theirs = _median_seconds(["sh", "-c", "%s get --raw /apis/operator.aicr.run/v1alpha1/runtimerollouts/%s "
                                  "&& %s get --raw /api/v1/namespaces/aicr-system/configmaps/%s"
                                  % (KUBECTL, upgrade, KUBECTL, report)], kubectl_env)
        print("describe wall   kubectl-aicr describe %6.0f ms   the 2 kubectl get calls %6.0f ms" % (
            ours * 1000, theirs * 1000))


def main():
    if not os.access(PLUGIN, os.X_OK):
        print("dist/kubectl-aicr is missing: run make build")
        return 1
    cold_start()
    describe_scaling()
    requests_per_command()
    return 0


if __name__ == "__main__":
    sys.exit(main())
