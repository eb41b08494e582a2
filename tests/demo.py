"""``make demo``: a local test API server on 127.0.0.1 and the real plugin file run against it.

Starts the HTTPS test API server (tests/support/apiserver/) with the sample rollouts of
tests/fixtures, writes a kubeconfig for it, and runs ``kubectl aicr ...`` through
the real kubectl (plugin discovery finds dist/kubectl-aicr on PATH), exactly as an
approver would: describe for an initial install, for an upgrade awaiting approval
with a verified report, and for a rollout whose report was tampered with; then an
approval and the describe that shows it. Everything stops when the demo ends; ``make serve``
(tests/serve.py) keeps the same server running for you to try the commands yourself. No
operator runs behind the test server: phases do not move after an approval.
"""

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.support.apiserver import APIServer  # noqa: E402

DIST = os.path.join(ROOT, "dist")


def _kubectl():
    venv = os.path.join(ROOT, ".venv", "bin", "kubectl")
    return venv if os.access(venv, os.X_OK) else shutil.which("kubectl")


def show(env, *args):
    kubectl = _kubectl()
    command = [kubectl, "aicr"] if kubectl else [os.path.join(DIST, "kubectl-aicr")]
    print("\n$ kubectl aicr %s" % " ".join(shlex.quote(a) for a in args), flush=True)
    code = subprocess.call(command + list(args), env=env)
    if code:
        print("(exit status %d)" % code, flush=True)
    return code


def main():
    if not os.access(os.path.join(DIST, "kubectl-aicr"), os.X_OK):
        print("error: dist/kubectl-aicr is missing; run make build", file=sys.stderr)
        return 1
    workdir = tempfile.mkdtemp(prefix="aicr-demo-")
    try:
        with APIServer(fixtures_dir=os.path.join(HERE, "fixtures"), workdir=workdir) as server:
            kubeconfig = os.path.join(workdir, "kubeconfig")
            server.write_kubeconfig_all(kubeconfig)
            env = dict(os.environ, KUBECONFIG=kubeconfig, PATH=DIST + os.pathsep + os.environ.get("PATH", ""))
            print("Test API server: %s (kubeconfig %s, context alice)" % (server.url, kubeconfig))
            install = server.fixture_name("install")
            upgrade = server.fixture_name("awaiting-approval")
            tampered = server.fixture_name("tampered-report")
            print("No operator runs behind it: phases do not move after an approval.")
            results = [
                show(env, "list"),
                show(env, "describe", install),
                show(env, "describe", upgrade),
                show(env, "describe", tampered),
                show(env, "approve", upgrade, "--expires", "2h", "--reason", "Maintenance window"),
                show(env, "approve", upgrade, "--reason", "again", "--context", "bob"),
                show(env, "describe", upgrade, "--context", "carol"),
            ]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    expected = [0, 0, 0, 3, 0, 1, 0]
    if results != expected:
        print("\ndemo: unexpected exit statuses %s (expected %s)" % (results, expected), file=sys.stderr)
        return 1
    print("\nThe tampered report was refused (exit 3) and the second approval too (exit 1), as they should be.")
    print("The rollout approved above is still AwaitingApproval: no operator runs behind the test server.")
    print("\nTo try the commands yourself: run `make serve` in one terminal (the same server and rollouts, until "
          "Ctrl-C)\nand paste the export lines it prints into another (README, \"Try it\").")
    return 0


if __name__ == "__main__":
    sys.exit(main())
