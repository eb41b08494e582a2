"""One module per command; each has ``run(invocation) -> exit status``."""
