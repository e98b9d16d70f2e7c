"""The JSON form of what a runner is handed, so that an event is plain JSON before its
``seq`` is used: a value JSON holds is kept; the usual Python values JSON has no form for
are converted as documented in docs/runner.md; anything else is refused with the field
named.

====================================  ============================================
Python value                          JSON form
====================================  ============================================
``float`` NaN, inf, -inf              the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
``Decimal``                           its exact text (``"12.50"``); NaN and infinities as above
``date``, ``datetime``, ``time``      ISO 8601 text (``"2026-12-04T10:00:00+00:00"``)
``set``, ``frozenset``                a list, sorted by the members' JSON text
``tuple``                             a list
other integers and reals (numpy's,    an ``int``; a ``float`` (NaN and infinities as
``Fraction``)                         above)
``bytes``, ``bytearray``              UTF-8 text if it decodes, else a
                                      ``data:application/octet-stream;base64,`` URI
``Enum``                              the form of its value
``UUID``, ``pathlib`` paths           their text
dict keys ``int``, ``float``, bool,   their JSON text (``1`` -> ``"1"``, as ``json.dumps``)
``None``
====================================  ============================================
"""
from __future__ import annotations

import base64
import json
import math
import numbers
from collections.abc import Mapping
from datetime import date, time
from decimal import Decimal
from enum import Enum
from pathlib import PurePath
from typing import Any
from uuid import UUID

from trustlayer.observe.json_fit import MAX_NESTING

NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class NoJsonForm(ValueError):
    """A value a runner was handed that has no JSON form; says which field holds it."""


def _non_finite(value: float | Decimal) -> str:
    return NON_FINITE[str(float(value)).lower()]


def _bytes(value: bytes | bytearray) -> str:
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return "data:application/octet-stream;base64," + base64.b64encode(value).decode()


def _key(key: Any, field: str) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, (int, float)):
        return json.dumps(key)
    raise NoJsonForm(f"field '{field}' has a key of type {type(key).__name__}: JSON keys "
                     "are strings")


def _scalar(value: Any) -> tuple[bool, Any]:
    """(True, its JSON form) for a value that is no container, else (False, None)."""
    if value is None or isinstance(value, (str, bool, int)):
        return True, value
    if isinstance(value, (float, Decimal)):
        finite = math.isfinite(value) if isinstance(value, float) else value.is_finite()
        return True, (value if isinstance(value, float) else str(value)) if finite \
            else _non_finite(value)
    if isinstance(value, numbers.Integral):  # numpy's integers, among others
        return True, int(value)
    if isinstance(value, numbers.Real):  # numpy's floats, fractions
        return _scalar(float(value))
    if isinstance(value, (date, time)):  # datetime is a date
        return True, value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return True, _bytes(value)
    if isinstance(value, (UUID, PurePath)):
        return True, str(value)
    return False, None


def json_form(value: Any, field: str, depth: int = 1) -> Any:
    """`value`, held by `field`, in its JSON form (see the module's table).

    >>> from decimal import Decimal
    >>> json_form({"price": Decimal("12.50"), "tags": {"b", "a"}, "x": float("nan")}, "args")
    {'price': '12.50', 'tags': ['a', 'b'], 'x': 'NaN'}
    >>> json_form({"lock": object()}, "action.args")
    Traceback (most recent call last):
    trustlayer.runner.json_forms.NoJsonForm: field 'action.args.lock': object has no JSON form
    """
    if depth > MAX_NESTING:  # a circular reference comes here too
        raise NoJsonForm(f"field '{field}' is nested deeper than {MAX_NESTING} levels")
    known, form = _scalar(value)
    if known:
        return form
    if isinstance(value, Enum):
        return json_form(value.value, field, depth)
    if isinstance(value, Mapping):
        return {_key(k, field): json_form(v, f"{field}.{k}", depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_form(v, f"{field}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        members = [json_form(v, f"{field}[]", depth + 1) for v in value]
        return sorted(members, key=lambda member: json.dumps(member, sort_keys=True))
    raise NoJsonForm(f"field '{field}': {type(value).__name__} has no JSON form")
