"""One conversation judged by what it changed and told (the model's
:class:`~trustlayer.model_effects.EffectSpine`, learned by :mod:`trustlayer.learn.effects`).

A change no successful run made, or made with other values, fails the run the moment the
tool has taken it (its answer is no refusal): evidence of failure is never outweighed by
what else the run did. At its end the run must have made every required change (one the
product refused is the product's fault) and told the person what every successful run
worked out and told. Extra reads, other words, other turns, and calls that carry only the
agent's own prose (a summary handed on) are no evidence either way.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from trustlayer.judge.reasons import (
    EXTRA_EFFECT,
    MISSING_EFFECT,
    SELF_REPORT_FAILURE,
    UNTOLD_FACT,
    Reason,
    conversation_passed,
    quoted,
)
from trustlayer.judge.signs import AGENT_ERROR, PRODUCT_BUG
from trustlayer.model_effects import EffectSpine, Required
from trustlayer.observe.conversation import Call, CallWatch, View, facts, said
from trustlayer.observe.trace_events import Event

Failure = tuple[str, Reason, str]  # cause, short reason, details
SHORT_ARGS = 2  # arguments named in a short reason (its details name them all)


def _value(encoded: str) -> str:
    """An argument's value as a person reads it (a string without its JSON quotes)."""
    try:
        value = json.loads(encoded)
    except ValueError:  # no value at all
        return encoded or "none"
    return value if isinstance(value, str) else encoded


def _args(view: View) -> str:
    return ", ".join(f"{key} {_value(value)}" for key, value in view)


def _extra(call: Call, spine: EffectSpine) -> Failure:
    """Why `call`, a change no successful run made so, fails the run."""
    views = spine.known.get(call.tool, ())
    if not views:
        tried = " (refused)" if call.refused else ""
        return (AGENT_ERROR,
                Reason(EXTRA_EFFECT, "only changes successful runs made",
                       f"the agent {'tried' if call.refused else 'called'} {call.tool} "
                       f"({_args(call.view[:SHORT_ARGS])})", call.seq),
                f"the agent called {call.tool} ({_args(call.view)}), a change no successful "
                f"run made{tried}")
    nearest = max(views, key=lambda view: (len(set(view) & set(call.view)), view))
    given = dict(call.view)
    key, value = next(((k, v) for k, v in nearest if given.get(k) != v), nearest[0]
                      if nearest else ("", ""))
    shown = _value(given[key]) if key in given else "none"
    return (AGENT_ERROR,
            Reason(EXTRA_EFFECT, f"{call.tool} with {key} {quoted(_value(value), 4)}",
                   f"the agent called it with {quoted(shown, 4)}", call.seq),
            f"the agent called {call.tool} ({_args(call.view)}); successful runs made that "
            f"change only as {' or '.join(f'({_args(view)})' for view in views)}")


class Found(NamedTuple):
    """What a conversation showed so far: the required changes and facts met, those
    missing and the share met; its failure, or the reason it passed (once ended)."""

    progress: tuple[list[str], list[str], float]
    failure: Failure | None = None
    passed: str | None = None


@dataclass
class EffectWatch:
    """What one conversation changed and told so far (River-style ``feed``)."""

    pending: list[Any] | None = None  # [tool, view, seq] of a change awaiting its answer
    made: list[list[Any]] = field(default_factory=list)  # [tool, view] taken by the tool
    refusals: list[list[Any]] = field(default_factory=list)  # [tool, view, seq, answer]
    told: list[str] = field(default_factory=list)  # the required facts told so far

    def judge(self, event: Event | None, seq: int, spine: EffectSpine | None) -> Found:
        """Take the run's next event (None: the run ended after `seq` without its end
        event) and say what the run showed so far."""
        if spine is None:
            raise ValueError("a conversation is judged by a model learned from conversations")
        ended = event is None or event.kind == "end"
        failure = self.close(spine, seq, event.self_report if event is not None else None) \
            if ended else self.feed(event, spine) if event is not None else None
        progress = self.progress(spine)
        if failure is not None or not ended:
            return Found(progress, failure)
        return Found(progress, passed=conversation_passed(len(spine.required), len(spine.told)))

    def feed(self, event: Event, spine: EffectSpine) -> Failure | None:
        """Take the run's next event; the failure it shows, if any."""
        watch = CallWatch(self._call(self.pending))
        done = watch.feed(event)
        self.pending = self._data(watch.pending)
        if (text := said(event)) is not None and spine.told:
            self.told = sorted(set(self.told) | (facts(text) & set(spine.told)))
        return self._take(done, spine) if done is not None else None

    @staticmethod
    def _call(data: list[Any] | None) -> Call | None:
        return None if data is None else Call(data[0], tuple((k, v) for k, v in data[1]), data[2])

    @staticmethod
    def _data(call: Call | None) -> list[Any] | None:
        return None if call is None else [call.tool, [list(p) for p in call.view], call.seq]

    def _take(self, call: Call, spine: EffectSpine) -> Failure | None:
        if not call.refused and call.view in spine.known.get(call.tool, ()) \
                and call.words - set(spine.answers.get(call.tool, ())):
            # their change, answered in words none of theirs got (``permission denied``):
            # not taken. Another change's answer differs anyway (another record's data).
            call = call._replace(refused=True)
        if call.refused:
            self.refusals.append([call.tool, [list(p) for p in call.view], call.seq, call.answer])
            # retrying a change successful runs made is no error; trying another one is
            return _extra(call, spine) if call.view and call.tool not in spine.tried else None
        self.made.append([call.tool, [list(p) for p in call.view]])
        if call.view and call.view not in spine.known.get(call.tool, ()):
            return _extra(call, spine)
        return None

    def _met(self, required: Required) -> bool:
        return any(required.met_by(tool, tuple((k, v) for k, v in view))
                   for tool, view in self.made)

    def close(self, spine: EffectSpine, seq: int, self_report: str | None) -> Failure | None:
        """The run's failure now that it ended after event `seq`, if any."""
        pending, self.pending = self._call(self.pending), None
        if pending is not None and (failure := self._take(pending, spine)):
            return failure
        for required in spine.required:
            if self._met(required):
                continue
            refusal = next((r for r in self.refusals
                            if required.met_by(r[0], tuple((k, v) for k, v in r[1]))), None)
            if refusal is not None:
                return (PRODUCT_BUG, Reason(MISSING_EFFECT, quoted(required.name, 4),
                                            f"the tool refused it: {quoted(refusal[3], 8)}",
                                            refusal[2]),
                        f"every successful run made the change {required.name}; the tool "
                        f"refused it here: {refusal[3]}")
            return (AGENT_ERROR, Reason(MISSING_EFFECT, quoted(required.name, 4),
                                        "the run ended without it", seq),
                    f"every successful run made the change {required.name} "
                    f"({_args(required.args)}); this run never did")
        for fact in spine.told:
            if fact not in self.told:
                return (AGENT_ERROR, Reason(UNTOLD_FACT, f"the agent to tell the person '{fact}'",
                                            "the run ended without saying it", seq),
                        f"every successful run told the person '{fact}', which it had worked "
                        "out; this run never did")
        if self_report == "failure":
            return (AGENT_ERROR, Reason(SELF_REPORT_FAILURE, "the task done",
                                        "the agent's own report showed failure", seq),
                    "the agent reported that it failed")
        return None

    def progress(self, spine: EffectSpine) -> tuple[list[str], list[str], float]:
        """The required changes and facts met and missing so far, and the share met."""
        asked = [(r.name, self._met(r)) for r in spine.required] + \
            [(f"told '{fact}'", fact in self.told) for fact in spine.told]
        met = [name for name, done in asked if done]
        return met, [name for name, done in asked if not done], \
            round(len(met) / len(asked), 4) if asked else 1.0

    def to_json(self) -> dict[str, Any]:
        return {"pending": self.pending, "made": self.made, "refusals": self.refusals,
                "told": self.told}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> EffectWatch:
        return cls(**data) if data else cls()
