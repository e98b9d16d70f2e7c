"""The part of a model learned from conversations: what successful runs changed and told
(:mod:`trustlayer.learn.effects` learns it, :mod:`trustlayer.judge.effects` judges by it).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trustlayer.errors import ModelError
from trustlayer.observe.conversation import View


@dataclass(frozen=True)
class Required:
    """A change every successful run made: a call of `tool` whose arguments include
    `args` (the values they all gave)."""

    tool: str
    args: View

    @property
    def name(self) -> str:
        """The tool and its main argument, as a person names the change
        (``cancel_reservation NQNU5R``): the first argument that holds a digit, else the
        first plain one."""
        plain = [value.strip('"') for _, value in self.args if value.startswith('"')]
        main = next((v for v in plain if any(c.isdigit() for c in v)), plain[0] if plain else "")
        return f"{self.tool} {main}".strip()

    def met_by(self, tool: str, view: View) -> bool:
        return tool == self.tool and set(self.args) <= set(view)


@dataclass(frozen=True)
class EffectSpine:
    """What successful conversations agree on.

    Attributes
    ----------
    known : per tool, every argument view (:func:`~trustlayer.observe.conversation.arg_view`)
        a successful run made a change with: a change with another is unexplained.
    tried : the tools successful runs called to change something, taken or refused: an
        attempt with another tool is unexplained even when refused.
    answers : per tool, the words of the answers successful runs got when it took their
        change: an answer with another word (``permission denied``) took nothing.
    required : the changes every successful run made.
    told : facts every successful run told the person that nothing had told it (a total it
        worked out); asked only when the runs made no change in common (then what they
        told is the whole of their work).
    """

    known: dict[str, tuple[View, ...]]
    tried: tuple[str, ...]
    answers: dict[str, tuple[str, ...]]
    required: tuple[Required, ...]
    told: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"known": {tool: [[list(pair) for pair in view] for view in views]
                          for tool, views in sorted(self.known.items())},
                "tried": list(self.tried),
                "answers": {tool: list(words) for tool, words in sorted(self.answers.items())},
                "required": [{"tool": r.tool, "args": [list(pair) for pair in r.args]}
                             for r in self.required],
                "told": list(self.told)}

    @classmethod
    def from_json(cls, data: Any) -> EffectSpine:
        """The spine of :meth:`to_json`; raises :class:`ModelError` on anything else."""
        try:
            return cls({str(tool): tuple(_view(v) for v in views)
                        for tool, views in data["known"].items()},
                       tuple(str(tool) for tool in data["tried"]),
                       {str(tool): tuple(str(w) for w in words)
                        for tool, words in data["answers"].items()},
                       tuple(Required(str(r["tool"]), _view(r["args"]))
                             for r in data["required"]),
                       tuple(str(fact) for fact in data["told"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"effects: damaged ({exc!r})") from None


def _view(pairs: Sequence[Sequence[str]]) -> View:
    return tuple((str(key), str(value)) for key, value in pairs)  # a wrong shape: ValueError
