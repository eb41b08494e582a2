"""The test API server: program mode: python -m tests.support.apiserver."""

import argparse
import os
import signal
import sys
import threading

from .server import APIServer


def main(argv=None):
    """``python -m tests.support.apiserver --fixtures DIR --dir OUTDIR [--port N] [--verbose]``.

    Writes OUTDIR/ca.crt, server and client certificates, and OUTDIR/kubeconfig (a context
    per user, current-context alice); prints the URL, then ``export KUBECONFIG=...``;
    serves until SIGTERM or SIGINT, then exits 0.
    """
    parser = argparse.ArgumentParser(prog="python -m tests.support.apiserver", description=main.__doc__.split("\n")[0])
    parser.add_argument("--fixtures", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures"))
    parser.add_argument("--dir", required=True, help="where to write the CA, certificates and kubeconfig")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--operator-namespace", default="aicr-system")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    outdir = os.path.abspath(args.dir)
    os.makedirs(outdir, exist_ok=True)
    server = APIServer(fixtures_dir=args.fixtures, workdir=outdir, port=args.port,
                       operator_namespace=args.operator_namespace, verbose=args.verbose).start()
    try:
        kubeconfig = server.write_kubeconfig_all(os.path.join(outdir, "kubeconfig"))
        print(server.url)
        print("export KUBECONFIG=%s" % kubeconfig)
        sys.stdout.flush()
        while not stop.wait(0.2):
            pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
