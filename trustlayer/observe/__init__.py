"""Observing runs: trace events read and validated, screenshots decoded, each state turned
into canonical lines (its fingerprint), the line templates learned over them, and what
a coding agent's diffs removed."""
