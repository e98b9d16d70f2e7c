"""The learned model of one task, and its versioned JSON file.

A model holds the merged states (each with learned templates and visual exemplars),
the graph's edges with action counts, the essential chain (dominators of SUCCESS),
optional and negative states, timing statistics, training run ids and the settings
used. ``Model.load(path)`` of ``model.save(path)`` gives an equal model.
"""
from __future__ import annotations

import base64
import errno
import hashlib
import json
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import cached_property, wraps
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from trustlayer.errors import ModelError, binary_kind
from trustlayer.model_check import check_model
from trustlayer.model_effects import EffectSpine
from trustlayer.observe.templates import Profile
from trustlayer.settings import Settings

#: What each model format added (the format written is the newest: a new one needs its line).
MODEL_FORMATS = {
    2: "wildcards are the tokens <*> and <**> (1 used * and **)",
    3: "nearest_milestone (was idom)",
    4: "end_evidence, required_removals, files_change_alone",
    5: "the signs of failure (gone_lines, checks, check_files, overcome, added_only, "
       "required_words, statuses, end_texts, some_checks)",
    6: "changed_files",
    7: "effects (what successful conversations changed and told)",
}
MODEL_FORMAT = max(MODEL_FORMATS)
#: The key of a model file's digest: SHA-256 of its content (:func:`content_digest`).
DIGEST = "digest"


def content_digest(data: dict[str, Any]) -> str:
    """SHA-256 of a model's JSON (`data`, without its digest), in one canonical form."""
    canonical = json.dumps({k: v for k, v in data.items() if k != DIGEST}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_digest(data: dict[str, Any], path: str) -> None:
    """Refuse a model file edited since `learn` wrote it (or written without a digest):
    one hand-edited list can make a model pass what it should fail."""
    stored = data.get(DIGEST)
    if stored is None:
        raise ModelError(f"{path}: the model has no digest (not written by `trustlayer learn`): "
                         "learn it again, or pass --unsigned-ok for a model made by hand")
    if stored != content_digest(data):
        raise ModelError(f"{path}: the model was changed after `trustlayer learn` wrote it "
                         "(its digest does not match): learn it again, or pass --unsigned-ok")


@dataclass
class ModelState:
    """One merged state of the model.

    Attributes
    ----------
    id : str
        Stable identifier (``s0``, ``s1``...), ordered by position in the runs.
    name : str
        Human name, distinct within the model, used in explanations.
    profile : Profile
        Learned templates of the state's canonical lines (empty when it has no text).
    structural : bool
        True when the state carries text, an accessibility tree or files.
    image_shas, phashes : list
        Screenshot digests and perceptual hashes of the members.
    thumbnails : list of bytes
        A few member thumbnails (grayscale, ``thumbnail_size`` squared) as exemplars.
    volatile_mask : bytes or None
        Packed boolean mask of thumbnail pixels that vary between members.
    members : list of [run_id, seq]
        Where the state was observed in the training runs.
    negative_cause : str or None
        For a negative milestone (seen only in failed runs), the cause it implies.
    tolerance : float
        Share of an observed state's content lines that its templates may leave
        unexplained while still matching (learned by leaving members out).
    """

    id: str
    name: str
    profile: Profile
    structural: bool
    image_shas: list[str] = field(default_factory=list)
    phashes: list[int] = field(default_factory=list)
    thumbnails: list[bytes] = field(default_factory=list)
    volatile_mask: bytes | None = None
    members: list[list[Any]] = field(default_factory=list)
    negative_cause: str | None = None
    tolerance: float = 0.0

    def mask_array(self, size: int) -> np.ndarray | None:
        if self.volatile_mask is None:
            return None
        return np.unpackbits(np.frombuffer(self.volatile_mask, dtype=np.uint8))[: size * size] \
            .reshape(size, size).astype(bool)

    def to_json(self) -> dict:
        return {"id": self.id, "name": self.name, "profile": self.profile.to_json(),
                "structural": self.structural, "image_shas": self.image_shas,
                "phashes": [f"{h:016x}" for h in self.phashes],
                "thumbnails": [base64.b64encode(t).decode("ascii") for t in self.thumbnails],
                "volatile_mask": None if self.volatile_mask is None else
                base64.b64encode(self.volatile_mask).decode("ascii"),
                "members": self.members, "negative_cause": self.negative_cause,
                "tolerance": self.tolerance}

    @classmethod
    def from_json(cls, data: dict) -> ModelState:
        return cls(data["id"], data["name"], Profile.from_json(data["profile"]),
                   data["structural"], list(data["image_shas"]),
                   [int(h, 16) for h in data["phashes"]],
                   [base64.b64decode(t) for t in data["thumbnails"]],
                   None if data["volatile_mask"] is None
                   else base64.b64decode(data["volatile_mask"]),
                   [list(m) for m in data["members"]], data.get("negative_cause"),
                   data.get("tolerance", 0.0))


@dataclass(frozen=True, eq=False, kw_only=True)  # learned once: a change is a new model
class Model:
    """A learned task model. Settings in ``settings``; learned state in the rest.

    Besides the states, the graph's edges, the essential chain (dominators of SUCCESS)
    and each state's nearest essential dominator (``nearest_milestone``), a model holds what
    is evidence of the goal (:mod:`trustlayer.learn.evidence`):
    ``accepting`` (states where successful runs ended), ``ending`` (all their last states
    as one state, for ends that share a shape), ``incidental`` (milestones that were a
    habit: skipped with a warning), ``transient`` (milestones that are a tool's report on
the finished work, met in another shape too), ``required_outputs`` (tool calls every successful run
    made with one value), ``required_removals`` (code lines every successful run removed,
    :mod:`trustlayer.observe.edits`), ``files_change_alone`` (whether a successful run's
    files ever changed with no action of its agent), ``end_evidence`` (per accepting
    state, what every run ending there showed of its finished work beyond what the state
    requires) and ``warnings`` (what the learner noticed for a person to check).
    What shows a failure (:mod:`trustlayer.learn.failure_signs`): ``gone_lines`` (per
    state where successful runs ended, what their work made go), ``checks`` (tools every
    successful run used after its last change of ``check_files``, the files they all changed) and
    ``overcome`` (per tool, the shapes of lines successful runs fixed), ``added_only``
    (files their diffs never took a line out of), ``required_words`` (names their diffs
    all added to ``check_files``), ``statuses`` (the HTTP statuses their pages got) and
    ``end_texts`` (text they all typed and showed verbatim at their end); ``some_checks``
    (tools only some of them used after that change: a warning, not a failure),
    ``changed_files`` (the files some of them changed: a line taken out of another fails).
    ``effects``, for conversations only, what successful runs changed and told
    (:class:`~trustlayer.model_effects.EffectSpine`): such a run is judged by it, not by
    the states of its turns.
    ``soft`` holds the essential states a run may skip: interruptions and incidental ones.
    """

    task: str
    version: int
    states: dict[str, ModelState]
    edges: list[dict[str, Any]]
    essential: list[str]
    soft: list[str]
    negative: list[str]
    nearest_milestone: dict[str, str]
    timing: dict[str, Any]
    training_runs: list[str]
    settings: Settings
    segment_actions: list[list[str]] = field(default_factory=list)
    convergence: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    accepting: list[str] = field(default_factory=list)
    ending: ModelState | None = None
    incidental: list[str] = field(default_factory=list)
    transient: list[str] = field(default_factory=list)
    required_outputs: dict[str, str] = field(default_factory=dict)
    required_removals: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    files_change_alone: bool = False
    end_evidence: dict[str, list[str]] = field(default_factory=dict)
    gone_lines: dict[str, list[str]] = field(default_factory=dict)
    checks: list[str] = field(default_factory=list)
    check_files: list[str] = field(default_factory=list)
    overcome: dict[str, list[str]] = field(default_factory=dict)
    added_only: list[str] = field(default_factory=list)
    required_words: dict[str, list[str]] = field(default_factory=dict)
    statuses: list[int] = field(default_factory=list)
    end_texts: list[str] = field(default_factory=list)
    some_checks: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)
    effects: EffectSpine | None = None

    @property
    def optional(self) -> list[str]:
        """States that successful runs may skip."""
        fixed = set(self.essential) | set(self.negative)
        return [sid for sid in self.states if sid not in fixed]

    def name(self, state_id: str) -> str:
        return self.states[state_id].name

    def out_actions(self, state_id: str) -> set[str]:
        """Action signatures successful runs took from `state_id`."""
        return {a for e in self.edges if e["source"] == state_id for a in e["actions"]}

    def successors(self, state_id: str) -> set[str]:
        return set(self._targets.get(state_id, ()))

    @cached_property  # (a model is not changed once learned; asked of most states judged)
    def _targets(self) -> dict[str, frozenset[str]]:
        targets: dict[str, set[str]] = {}
        for edge in self.edges:
            targets.setdefault(edge["source"], set()).add(edge["target"])
        return {source: frozenset(found) for source, found in targets.items()}

    def to_json(self) -> dict:
        return {"format": MODEL_FORMAT, "task": self.task, "version": self.version,
                "states": [s.to_json() for s in self.states.values()], "edges": self.edges,
                "essential": self.essential, "soft": self.soft, "negative": self.negative,
                "nearest_milestone": self.nearest_milestone, "timing": self.timing,
                "training_runs": self.training_runs,
                "settings": self.settings.to_json(), "segment_actions": self.segment_actions,
                "convergence": self.convergence, "history": self.history,
                "accepting": self.accepting, "incidental": self.incidental,
                "transient": self.transient,
                "ending": None if self.ending is None else self.ending.to_json(),
                "required_outputs": self.required_outputs,
                "required_removals": self.required_removals, "warnings": self.warnings,
                "files_change_alone": self.files_change_alone,
                "end_evidence": self.end_evidence, "gone_lines": self.gone_lines,
                "checks": self.checks, "check_files": self.check_files,
                "overcome": self.overcome, "added_only": self.added_only,
                "required_words": self.required_words, "statuses": self.statuses,
                "end_texts": self.end_texts, "some_checks": self.some_checks,
                "changed_files": self.changed_files,
                "effects": None if self.effects is None else self.effects.to_json()}

    @classmethod
    def from_json(cls, data: dict) -> Model:
        fmt = data.get("format")
        if not isinstance(fmt, int):
            raise ModelError("not a trustlayer model (no 'format' field)")
        if fmt < MODEL_FORMAT:
            raise ModelError(f"model format {fmt} was written by an older trustlayer; learn the "
                             "model again from its runs")
        if fmt > MODEL_FORMAT:
            raise ModelError(f"model format {fmt} is newer than this trustlayer reads "
                             f"({MODEL_FORMAT}); upgrade trustlayer")
        check_model(data, fields(cls))
        try:
            states = [ModelState.from_json(s) for s in data["states"]]
            return cls(
                task=data["task"], version=data["version"], states={s.id: s for s in states},
                edges=data["edges"], essential=data["essential"], soft=data["soft"],
                negative=data["negative"], nearest_milestone=data["nearest_milestone"],
                timing=data["timing"], training_runs=data["training_runs"],
                settings=Settings.from_json(data["settings"]),
                segment_actions=data["segment_actions"], convergence=data["convergence"],
                history=data.get("history", []), accepting=data["accepting"],
                ending=None if data["ending"] is None else ModelState.from_json(data["ending"]),
                incidental=data["incidental"], transient=data.get("transient", []),
                required_outputs=data["required_outputs"],
                required_removals=data.get("required_removals", {}), warnings=data["warnings"],
                files_change_alone=data.get("files_change_alone", False),
                end_evidence=data.get("end_evidence", {}), gone_lines=data.get("gone_lines", {}),
                checks=data.get("checks", []), check_files=data.get("check_files", []),
                overcome=data.get("overcome", {}), added_only=data.get("added_only", []),
                required_words=data.get("required_words", {}),
                statuses=data.get("statuses", []), end_texts=data.get("end_texts", []),
                some_checks=data.get("some_checks", []),
                changed_files=data.get("changed_files", []),
                effects=None if data.get("effects") is None
                else EffectSpine.from_json(data["effects"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"model file is damaged: {exc!r}") from None

    def save(self, path: str | Path) -> None:
        """Write the model as JSON (atomically: a temporary file, then a rename; the
        temporary file does not stay when either fails)."""
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "a directory, not a model file", str(path))
        tmp = path.with_name(path.name + ".tmp")
        try:
            data = self.to_json()
            tmp.write_text(json.dumps({**data, DIGEST: content_digest(data)}, indent=1,
                                      sort_keys=True), encoding="utf-8")
            tmp.replace(path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path, verify: bool = False) -> Model:
        """Read a model file; raises :class:`ModelError` with a clear message. With
        `verify`, a file whose content no longer matches the digest `save` wrote is
        refused (:func:`check_digest`)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ModelError(f"{path}: model file not found") from None
        except UnicodeDecodeError:
            kind = binary_kind(Path(path).read_bytes()[:8])
            raise ModelError(f"{path}: not a JSON model file: it holds binary data{kind}; "
                             "give the .json file `trustlayer learn` wrote") from None
        except json.JSONDecodeError as exc:
            raise ModelError(f"{path}: not a JSON model file ({exc})") from None
        if not isinstance(data, dict):
            raise ModelError(f"{path}: not a trustlayer model")
        if verify:
            check_digest(data, str(path))
        try:
            return cls.from_json(data)
        except ModelError as exc:
            raise ModelError(f"{path}: {exc}") from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and self.to_json() == other.to_json()


T = TypeVar("T")


def per_model(work_out: Callable[[Model], T]) -> Callable[[Model], T]:
    """`work_out(model)` done once per model and remembered: a model is not changed once
    learned (:func:`trustlayer.learn.learner.with_negatives` makes a new one). The values
    are kept beside the models, by id, not on them (a model holds what was learned, no
    caches), and each is dropped with its model."""
    known: dict[int, T] = {}

    @wraps(work_out)
    def remembered(model: Model) -> T:
        try:
            return known[id(model)]
        except KeyError:
            weakref.finalize(model, known.pop, id(model), None)
            value = known[id(model)] = work_out(model)
            return value
    return remembered
