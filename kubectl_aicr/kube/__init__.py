"""The Kubernetes client side, nothing AICR-specific: kubeconfig -> clientcmd -> auth -> rest (see docs/architecture.md)."""
