"""The goals the benchmarks print their figures against (issue 38's, on this machine)."""
from __future__ import annotations

import operator

_HOLDS = {"<=": operator.le, ">=": operator.ge}


def goal(value: float, relation: str, limit: float, unit: str = "") -> str:
    """`value` beside its goal, saying whether it is met: ``(goal <= 0.5: missed)``.

    >>> goal(0.4, "<=", 0.5), goal(19.2, "<=", 20, " ms"), goal(0.48, ">=", 1.0)
    ('(goal <= 0.5: met)', '(goal <= 20 ms: met)', '(goal >= 1.0: missed)')
    """
    met = "met" if _HOLDS[relation](value, limit) else "missed"
    return f"(goal {relation} {limit}{unit}: {met})"
