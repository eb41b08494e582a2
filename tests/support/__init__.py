"""What the tests share: the test API server and its parts, certificates, proxies, the kubeconfig corpus,
the changes another client makes between a read and a write, and running the built plugin."""
