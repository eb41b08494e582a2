"""``make serve``: the test API server with the demo fixtures, in the foreground until Ctrl-C: a playground.

Starts the HTTPS test API server (tests/support/apiserver/) on 127.0.0.1 with the rollouts, plans and
reports of tests/fixtures, writes a kubeconfig for it (a context per test user), and prints the
``export`` lines to paste into another terminal, the contexts, and each fixture rollout with what
it shows. It serves until SIGINT (Ctrl-C) or SIGTERM, then exits 0. No operator runs behind the
test server: phases never move after an approval or an acknowledgement; what you write is stored
as the API server would store it, and the admission rules are enforced.

Usage: ``python -m tests.serve [--dir DIR] [--port N]`` (default DIR: build/playground).
"""

import argparse
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.support.apiserver import APIServer  # noqa: E402

# fixture role -> what the rollout shows and what to try on it (tests/fixtures/README.md has the details)
ROLLOUTS = (
    ("awaiting-approval", "upgrade awaiting approval, verified report: describe, approve, then revoke"),
    ("tampered-report", "its report was edited after AICR made it: describe refuses it (exit 3)"),
    ("deadline-passed", "awaiting approval past its deadline: approve needs --expires"),
    ("no-assessment", "awaiting approval with no assessment report"),
    ("report-missing", "records a report the cluster does not hold"),
    ("awaiting-acknowledgement", "waits on nvsentinel's post-apply steps: acknowledge"),
    ("approved-rolling-out", "approved by alice, rolling out: a second approval is refused; revoke"),
    ("validating", "approved, validating: the server refuses a revocation now"),
    ("install", "initial install, no approval needed"),
    ("succeeded", "ended Succeeded (list --all)"),
    ("revoked", "ended Revoked by bob (list --all)"),
    ("expired", "ended Expired: its approval ran out (list --all)"),
    ("failed", "ended Failed: a step failed (list --all)"),
)
CONTEXTS = "alice, bob, approver-01..20 (approvers); carol (reader); mallory (no rights); admin (system:masters)"


def banner(server, kubeconfig):
    """The lines printed once the server is up."""
    lines = [
        "Test API server: %s" % server.url,
        "No operator runs behind it: phases do not move after an approval or an acknowledgement.",
        "",
        "In another terminal:",
        "  export KUBECONFIG=%s" % kubeconfig,
        "  export PATH=%s:$PATH" % os.path.join(ROOT, "dist"),
        "  kubectl aicr list",
        "",
        "Contexts (--context NAME; the current one is alice): %s" % CONTEXTS,
        "",
        "Rollouts:",
    ]
    width = max(len(server.fixture_name(role)) for role, _ in ROLLOUTS)
    for role, what in ROLLOUTS:
        obj = server.fixture(role)
        phase = (obj.get("status") or {}).get("phase", "")
        lines.append("  %s  %-23s  %s" % (obj["metadata"]["name"].ljust(width), phase, what))
    lines += ["", "Press Ctrl-C to stop (everything you changed is forgotten)."]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="make serve", description=__doc__.split("\n")[0])
    parser.add_argument("--dir", default=os.path.join(ROOT, "build", "playground"),
                        help="where to write the CA, certificates and kubeconfig (default build/playground)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    args = parser.parse_args(argv)
    if not os.access(os.path.join(ROOT, "dist", "kubectl-aicr"), os.X_OK):
        print("error: dist/kubectl-aicr is missing; run make build", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    workdir = os.path.abspath(args.dir)
    os.makedirs(workdir, exist_ok=True)
    server = APIServer(fixtures_dir=os.path.join(HERE, "fixtures"), workdir=workdir, port=args.port).start()
    try:
        kubeconfig = server.write_kubeconfig_all(os.path.join(workdir, "kubeconfig"))
        print("\n".join(banner(server, kubeconfig)), flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        server.stop()
    print("\nstopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
