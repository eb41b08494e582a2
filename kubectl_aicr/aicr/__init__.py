"""The AICR side: the operator's objects and their field paths (see docs/operator-api.md)."""
