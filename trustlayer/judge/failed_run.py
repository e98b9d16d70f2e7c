"""A run that failed as the cause rules read it (:class:`FailedRun`), and what a rule
finds (:data:`Explained`: the decision path, the blame, the short reason)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trustlayer.judge.history import Observed
from trustlayer.judge.reasons import Reason
from trustlayer.judge.signs import Sign
from trustlayer.model import Model

PRODUCT_BUG, AGENT_ERROR = "product_bug", "agent_error"

Explained = tuple[str, str, Reason]  # details, cause, the short reason


@dataclass
class FailedRun:
    """What the rules read of a run that failed, and where the scan of its states is:
    `start` is the row of its last milestone, `known` the last row like what successful
    runs show next."""

    model: Model
    history: Sequence[Observed]
    position: int
    last: str | None
    headline: Sign
    start: int
    known: Observed | None

    def found(self, details: str, cause: str, shown: str, seq: int | None,
              action: str | None = None) -> Explained:
        """The rule's finding: `details` after the headline, the blame, the short reason."""
        return (f"{self.headline.reason}: {details}", cause,
                Reason(self.headline.code, self.headline.expected, shown, seq, action))

    @property
    def end(self) -> int | None:
        return self.history[-1].seq if self.history else None
