"""A 1,000-context, 2 MB kubeconfig: the plugin's whole-process time to its first request, beside
``kubectl config current-context`` on the same file and ``json.load`` of the same content.

The file is written as kubectl writes kubeconfigs (block YAML, sorted keys): 1,000 clusters
(each with its CA as certificate-authority-data), 1,000 token users and 1,000 contexts, the
current one the last. Every cluster points at the HTTPS test API server run here, which notes
when the first request of each run arrives. Figures are medians of several runs.

Goal: the plugin, from process start to its first request, is not slower than kubectl
reading the same file to print its current context.
"""

import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import yaml  # noqa: E402  (test-only tools: the bench runs in .venv)

from kubectl_aicr.kube import kubeconfig  # noqa: E402
from tests.support.apiserver import APIServer  # noqa: E402

PLUGIN = os.path.join(ROOT, "dist", "kubectl-aicr")
KUBECTL = os.path.join(ROOT, ".venv", "bin", "kubectl")
CONTEXTS = 1000
TARGET_BYTES = 2 * 1024 * 1024
REPEAT = 7


def make_kubeconfig(server, path):
    """Write the 1,000-context kubeconfig for ``server``; return (size in bytes, the parsed dict)."""
    ca = base64.b64encode(open(server.ca_file, "rb").read()).decode()
    token = server.token("bob@example.com")
    filler = max(0, TARGET_BYTES // CONTEXTS - len(ca) - 235)
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {}, "clusters": [], "users": [], "contexts": [],
              "current-context": "ctx-%04d" % (CONTEXTS - 1)}
    for i in range(CONTEXTS):
        config["clusters"].append({"name": "cluster-%04d" % i, "cluster": {
            "server": server.url, "certificate-authority-data": ca}})
        user = {"token": token} if i == CONTEXTS - 1 else {"token": ("t%04d" % i) * (filler // 5 + 1)}
        config["users"].append({"name": "user-%04d" % i, "user": user})
        config["contexts"].append({"name": "ctx-%04d" % i, "context": {
            "cluster": "cluster-%04d" % i, "user": "user-%04d" % i, "namespace": "team-%03d" % (i % 100)}})
    text = yaml.safe_dump(config, sort_keys=True, default_flow_style=False, width=1 << 20)
    with open(path, "w") as handle:
        handle.write(text)
    return len(text.encode()), config


def python_env(folder):
    """PATH with the real interpreter first, so the file's `env python3` line skips any pyenv shim."""
    folder = os.path.join(folder, "bin")
    os.mkdir(folder)
    os.symlink(os.path.join(sys.base_prefix, "bin", "python3"), os.path.join(folder, "python3"))
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "KUBECONFIG"}
    env["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")
    return env


class FirstRequest:
    """Notes, per run, when the server's first request arrived (time.perf_counter)."""

    def __init__(self, server):
        self.lock = threading.Lock()
        self.at = None
        original = server._record

        def record(entry):
            with self.lock:
                if self.at is None:
                    self.at = time.perf_counter()
            original(entry)
        server._record = record

    def time_to_first_request(self, argv, env):
        with self.lock:
            self.at = None
        started = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                       timeout=60)
        with self.lock:
            if self.at is None:
                raise RuntimeError("no request arrived from %s" % argv[0])
            return self.at - started


def whole_process(argv, env):
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                   timeout=60)
    return time.perf_counter() - started


def median_ms(measure, *args):
    return statistics.median(measure(*args) for _ in range(REPEAT)) * 1000


def in_process_ms(function):
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main():
    if not os.access(PLUGIN, os.X_OK):
        print("dist/kubectl-aicr is missing: run make build")
        return 1
    folder = tempfile.mkdtemp(prefix="aicr-kubeconfig-bench-")
    try:
        return _measure(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _measure(folder):
    with APIServer() as server:
        path = os.path.join(folder, "config")
        size, config = make_kubeconfig(server, path)
        json_path = os.path.join(folder, "config.json")
        with open(json_path, "w") as handle:
            json.dump(config, handle)
        env = python_env(folder)
        first = FirstRequest(server)
        ours = median_ms(first.time_to_first_request, [PLUGIN, "describe", "x", "--kubeconfig", path], env)
        theirs = median_ms(whole_process, [KUBECTL, "config", "current-context", "--kubeconfig", path], env)
        kubectl_first = median_ms(first.time_to_first_request,
                                  [KUBECTL, "--kubeconfig", path, "get", "--raw", "/version"], env)
        json_process = median_ms(whole_process, ["python3", "-c", "import json, sys; json.load(open(sys.argv[1]))",
                                                 json_path], env)
        json_in_process = in_process_ms(lambda: json.load(open(json_path)))
        load_in_process = in_process_ms(lambda: kubeconfig.load(path))
        python = median_ms(whole_process, ["python3", "-c", "pass"], env)
        bare = median_ms(whole_process, ["python3", "-S", "-c", "pass"], env)
    print("kubeconfig: %d contexts, %.2f MB of YAML (current context: the last)" % (CONTEXTS, size / 1e6))
    print("  kubectl-aicr describe, process start to first request  %6.0f ms" % ours)
    print("  kubectl config current-context (whole process)          %6.0f ms   goal: plugin not slower  %s"
          % (theirs, "MET" if ours <= theirs else "NOT MET"))
    print("  kubectl get --raw, process start to first request        %6.0f ms" % kubectl_first)
    print("  json.load of the same content as JSON: in-process %4.0f ms, as a python3 process %4.0f ms"
          % (json_in_process, json_process))
    print("  (the plugin's kubeconfig.load alone, in-process: %.0f ms; the interpreter's own start, python3 -c pass:"
          " %.0f ms, of which site-packages .pth files: %.0f ms)" % (load_in_process, python, max(0, python - bare)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
