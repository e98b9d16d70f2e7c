"""The required outputs of one run (``model.required_outputs``: tool calls every successful
run made with one value): the value the agent last gave each, and what its screen showed
then. An answer reported is the run's evidence of the goal; another value is its error."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trustlayer.model import Model
from trustlayer.observe.canonical import shows
from trustlayer.observe.trace_events import Action


@dataclass
class OutputLedger:
    """Per required call: the last value given, whether the screen before it showed that
    value, and whether it showed the value every successful run gave."""

    outputs: dict[str, str] = field(default_factory=dict)
    outputs_shown: dict[str, bool] = field(default_factory=dict)
    expected_shown: dict[str, bool] = field(default_factory=dict)

    def observe(self, model: Model, action: Action, screen: frozenset[str] | None) -> None:
        """Take the agent's `action`, made on a state whose lines were `screen`."""
        call = action.call
        if action.value is None or call not in model.required_outputs:
            return
        self.outputs[call] = action.value
        self.outputs_shown[call] = shows(screen, action.value)
        self.expected_shown[call] = shows(screen, model.required_outputs[call])

    def answered(self, model: Model) -> bool:
        """Whether every required call was made with the value every successful run gave."""
        required = model.required_outputs
        return bool(required) and all(self.outputs.get(call) == value
                                      for call, value in required.items())

    def wrong(self, model: Model) -> tuple[str, str, str] | None:
        """A required call made with another value: the call, that value, the expected."""
        for call, value in model.required_outputs.items():
            given = self.outputs.get(call)
            if given is not None and given != value:
                return call, given, value
        return None

    def to_json(self) -> dict[str, Any]:
        # copies of its dicts (of strings and booleans), not asdict()'s deep copy
        return {"outputs": dict(self.outputs), "outputs_shown": dict(self.outputs_shown),
                "expected_shown": dict(self.expected_shown)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OutputLedger:
        return cls(dict(data.get("outputs", {})), dict(data.get("outputs_shown", {})),
                   dict(data.get("expected_shown", {})))
