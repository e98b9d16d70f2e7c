"""Structural check of a model file's JSON before any of it is used.

A model file may be damaged or tampered with: a negative count or threshold, a state id that
names no state, a list where a number belongs. :func:`check_model` finds the first such
value and raises :class:`~trustlayer.errors.ModelError` naming where it is
(``states[3].phashes[0]: ...``), so that no reader of the model meets a value of the wrong
kind. Field lists come from the dataclasses in :mod:`trustlayer.model` and
:mod:`trustlayer.settings`; keys this module does not know are left alone.
"""
from __future__ import annotations

import binascii
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, Field, fields
from typing import Any

from trustlayer.errors import ModelError
from trustlayer.graph_marks import START, SUCCESS
from trustlayer.observe.json_fit import json_problem
from trustlayer.settings import LLMSettings, Settings
from trustlayer.strict_base64 import strict_b64decode

HEX64, HEX16 = re.compile(r"[0-9a-f]{64}"), re.compile(r"[0-9a-f]{16}")
CAUSES = (None, "product_bug", "agent_error")
FRACTION_SETTINGS = ("ssim_same", "ssim_different", "unexplained_line_tolerance")
POSITIVE_SETTINGS = ("thumbnail_size", "max_image_pixels", "max_image_bytes")
TIMING_STATS = ("min", "median", "max", "n")
STATE_KEYS = ("id", "name", "profile", "structural", "image_shas", "phashes", "thumbnails",
              "volatile_mask", "members")
STATE_LISTS = ("essential", "negative", "convergence", "accepting", "incidental",
               "transient")


def _fail(where: str, what: str, value: Any = MISSING) -> ModelError:
    shown = "" if value is MISSING else f", got {_short(value)}"
    return ModelError(f"{where}: {what}{shown}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any, where: str, least: int = 0) -> None:
    if not _is_int(value) or not least <= value < 2 ** 53:
        raise _fail(where, f"must be a whole number of at least {least}", value)


def _number(value: Any, where: str, low: float = 0.0, high: float = math.inf) -> None:
    if not (_is_int(value) and abs(value) < 2 ** 53 or isinstance(value, float)
            and math.isfinite(value)) or not low <= value <= high:
        bounds = f"from {low:g} to {high:g}" if math.isfinite(high) else f"of at least {low:g}"
        raise _fail(where, f"must be a finite number {bounds}", value)


def _typed(value: Any, kind: type, where: str) -> None:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        noun = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}
        raise _fail(where, f"must be {noun.get(kind, kind.__name__)}", value)


def _strings(value: Any, where: str) -> None:
    _typed(value, list, where)
    for number, item in enumerate(value):
        _typed(item, str, f"{where}[{number}]")


def _ids(value: Any, where: str, known: Iterable[str]) -> list[str]:
    _strings(value, where)
    known = set(known)
    for number, item in enumerate(value):
        if item not in known:
            raise _fail(f"{where}[{number}]", "names no state of the model", item)
    if len(set(value)) != len(value):
        raise _fail(where, "lists a state twice", value)
    return value


def _base64(value: Any, where: str, length: int) -> None:
    _typed(value, str, where)
    try:
        data = strict_b64decode(value)
    except (binascii.Error, ValueError):
        raise _fail(where, "must be base64") from None
    if len(data) != length:
        raise _fail(where, f"must hold {length} bytes, holds {len(data)}")


def _defaults_match(data: Any, where: str, kind: type) -> None:
    """Each known field of the settings dataclass `kind` present in `data` has the type of
    its default; numbers are finite and not negative."""
    _typed(data, dict, where)
    for spec in fields(kind):
        if spec.name not in data or spec.default is MISSING:
            continue
        value, at = data[spec.name], f"{where}.{spec.name}"
        if isinstance(spec.default, bool) or isinstance(spec.default, str):
            _typed(value, type(spec.default), at)
        elif _is_int(spec.default):
            _count(value, at)
        elif isinstance(spec.default, float):
            _number(value, at)


def check_settings(data: Any) -> int:
    """Check the model's settings; return its thumbnail size."""
    _defaults_match(data, "settings", Settings)
    if "llm" in data:
        _defaults_match(data["llm"], "settings.llm", LLMSettings)
    for name in FRACTION_SETTINGS:
        if name in data:
            _number(data[name], f"settings.{name}", 0.0, 1.0)
    for name in POSITIVE_SETTINGS:
        if name in data:
            _count(data[name], f"settings.{name}", 1)
    return data.get("thumbnail_size", Settings().thumbnail_size)


def check_state(state: Any, where: str, size: int) -> None:
    """One entry of ``states``: its id, name, learned templates and visual exemplars."""
    _typed(state, dict, where)
    for key in STATE_KEYS:
        if key not in state:
            raise _fail(where, f"has no '{key}'")
    _typed(state["id"], str, f"{where}.id")
    _typed(state["name"], str, f"{where}.name")
    _typed(state["structural"], bool, f"{where}.structural")
    profile = state["profile"]
    _typed(profile, dict, f"{where}.profile")
    _strings(profile.get("templates"), f"{where}.profile.templates")
    salient = profile.get("salient")
    _typed(salient, list, f"{where}.profile.salient")
    if len(salient) != len(profile["templates"]) or not all(isinstance(s, bool) for s in salient):
        raise _fail(f"{where}.profile.salient", "must be one true/false per template")
    for key in ("image_shas", "phashes", "thumbnails", "members"):
        _typed(state[key], list, f"{where}.{key}")
    for number, sha in enumerate(state["image_shas"]):
        if not isinstance(sha, str) or not HEX64.fullmatch(sha):
            raise _fail(f"{where}.image_shas[{number}]", "must be 64 lowercase hex digits", sha)
    for number, phash in enumerate(state["phashes"]):
        if not isinstance(phash, str) or not HEX16.fullmatch(phash):
            raise _fail(f"{where}.phashes[{number}]", "must be 16 lowercase hex digits", phash)
    for number, thumbnail in enumerate(state["thumbnails"]):
        _base64(thumbnail, f"{where}.thumbnails[{number}]", size * size)
    if state["volatile_mask"] is not None:
        _base64(state["volatile_mask"], f"{where}.volatile_mask", (size * size + 7) // 8)
    for number, member in enumerate(state["members"]):
        at = f"{where}.members[{number}]"
        if not isinstance(member, list) or len(member) != 2:
            raise _fail(at, "must be [run_id, seq]", member)
        _typed(member[0], str, f"{at}[0]")
        _count(member[1], f"{at}[1]")
    if state.get("negative_cause") not in CAUSES:
        raise _fail(f"{where}.negative_cause", "must be null, product_bug or agent_error",
                    state["negative_cause"])
    if "tolerance" in state:
        _number(state["tolerance"], f"{where}.tolerance", 0.0, 1.0)


def check_edges(edges: Any, ids: set[str]) -> None:
    """Edges go from a state or START to a state or SUCCESS, with run and action counts."""
    _typed(edges, list, "edges")
    for number, edge in enumerate(edges):
        where = f"edges[{number}]"
        _typed(edge, dict, where)
        for key, allowed in (("source", ids | {START}), ("target", ids | {SUCCESS})):
            if not isinstance(edge.get(key), str) or edge[key] not in allowed:
                raise _fail(f"{where}.{key}", "names no state of the model", edge.get(key))
        _count(edge.get("runs"), f"{where}.runs", 1)
        actions = edge.get("actions")
        _typed(actions, dict, f"{where}.actions")
        for action, times in actions.items():
            _count(times, f"{where}.actions[{action!r}]")


def check_timing(timing: Any, ids: set[str]) -> None:
    """``timing``: per kind of duration, per state, statistics in seconds (not negative)."""
    _typed(timing, dict, "timing")
    for name in ("time_to_reach", "dwell"):
        if name not in timing:
            raise _fail("timing", f"has no '{name}'")
    for name, per_state in timing.items():
        _typed(per_state, dict, f"timing.{name}")
        for sid, stats in per_state.items():
            where = f"timing.{name}.{sid}"
            if sid not in ids:
                raise _fail(where, "names no state of the model")
            _typed(stats, dict, where)
            for stat in TIMING_STATS:
                if stat not in stats:
                    raise _fail(where, f"has no '{stat}'")
            for stat, value in stats.items():
                if stat == "n":
                    _count(value, f"{where}.n", 1)
                else:
                    _number(value, f"{where}.{stat}")
            if not stats["min"] <= stats["median"] <= stats["max"]:
                raise _fail(where, "must have min <= median <= max")


def check_model(data: dict, shape: Sequence[Field]) -> None:
    """Raise :class:`ModelError` at the first value of a model's JSON that is missing, of
    the wrong type, negative, out of range or naming a state the model does not have;
    `shape` is the model class's fields (which are required, which hold a single state).

    >>> from dataclasses import fields
    >>> from trustlayer.model import Model
    >>> check_model({"task": "t", "version": 1}, fields(Model))
    Traceback (most recent call last):
    ...
    trustlayer.errors.ModelError: model: has no 'states'
    """
    problem = json_problem(data)
    if problem:
        raise _fail("model", problem.message)
    for spec in shape:
        if spec.default is MISSING and spec.default_factory is MISSING and spec.name not in data:
            raise _fail("model", f"has no '{spec.name}'")
    _typed(data["task"], str, "task")
    if not data["task"]:
        raise _fail("task", "must not be empty")
    _count(data["version"], "version")
    known = _check_states(data, shape)
    _check_graph(data, known)
    _check_evidence(data)


def _check_states(data: dict, shape: Sequence[Field]) -> set[str]:
    """Check the model's states (and the single ones its fields hold); their ids."""
    size = check_settings(data["settings"])
    _typed(data["states"], list, "states")
    for number, state in enumerate(data["states"]):
        check_state(state, f"states[{number}]", size)
        if not state["name"].strip():
            raise _fail(f"states[{number}].name", "must not be empty")
    for spec in shape:  # other single states the model keeps (e.g. its ending)
        if str(spec.type) in ("ModelState", "ModelState | None") \
                and data.get(spec.name) is not None:
            check_state(data[spec.name], spec.name, size)
    ids = [state["id"] for state in data["states"]]
    if len(set(ids)) != len(ids):
        raise _fail("states", "hold one id twice")
    return set(ids)


def _check_graph(data: dict, known: set[str]) -> None:
    """Check the edges, the lists of states, milestones and timing: only `known` ids."""
    check_edges(data["edges"], known)
    for name in STATE_LISTS:
        if name in data:
            _ids(data[name], name, known)
    _ids(data["soft"], "soft", data["essential"])
    if set(data["negative"]) & set(data["essential"]):
        raise _fail("negative", "names an essential state",
                    sorted(set(data["negative"]) & set(data["essential"])))
    _typed(data["nearest_milestone"], dict, "nearest_milestone")
    for state, dominator in data["nearest_milestone"].items():
        if state not in known | {SUCCESS} or not isinstance(dominator, str) \
                or dominator not in known | {START}:
            raise _fail(f"nearest_milestone.{state}", "names no state of the model", dominator)
    check_timing(data["timing"], known)


def _check_evidence(data: dict) -> None:
    """Check what the model learned beside its graph: runs, outputs, end evidence, signs."""
    _strings(data["training_runs"], "training_runs")
    _typed(data.get("segment_actions", []), list, "segment_actions")
    for number, actions in enumerate(data.get("segment_actions", [])):
        _strings(actions, f"segment_actions[{number}]")
    _typed(data.get("history", []), list, "history")
    outputs = data.get("required_outputs", {})
    _typed(outputs, dict, "required_outputs")
    for path, digest in outputs.items():
        _typed(digest, str, f"required_outputs[{path!r}]")
    _typed(data.get("files_change_alone", False), bool, "files_change_alone")
    evidence = data.get("end_evidence", {})
    _typed(evidence, dict, "end_evidence")
    _ids(list(evidence), "end_evidence", data.get("accepting", []))
    for state, templates in evidence.items():
        _strings(templates, f"end_evidence[{state!r}]")
    for name in ("required_removals", "overcome", "gone_lines", "required_words"):
        _string_lists(data.get(name, {}), name)
    _ids(list(data.get("gone_lines", {})), "gone_lines", data.get("accepting", []))
    _typed(data.get("statuses", []), list, "statuses")
    for number, status in enumerate(data.get("statuses", [])):
        _count(status, f"statuses[{number}]", 100)
    for name in ("checks", "check_files", "added_only", "end_texts", "some_checks",
                 "changed_files"):
        _strings(data.get(name, []), name)


def _string_lists(value: Any, where: str) -> None:
    _typed(value, dict, where)
    for key, lines in value.items():
        _strings(lines, f"{where}[{key!r}]")
