"""YAML readers for kubeconfig and exec plugin output: block (fast, the plain block style), reader (full YAML 1.2)."""
