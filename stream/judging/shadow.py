"""A refined version that changes what the model passes is tried in shadow before it is used.

The refiner publishes such a version marked ``shadow`` (:func:`stream.models.registry.in_shadow`):
runs still start on the version in use, and each run that starts while the trial lasts is
also fed to a matcher on the shadow version (in memory: a run resumed after a restart is
not compared). When the run ends both final verdicts are compared; every disagreement is
counted (``trustlayer_shadow_disagreements_total``, alert ``ShadowVerdictsDisagree``) and
logged. A shadow version that passes a run whose end says ``failure`` is rejected at once:
a rollback to the version it was tried against ends its trial and its runs are dropped. After
``shadow_runs`` runs compared without that, it is promoted: a new version with its body,
used from then on. ``trustlayer models rollback`` undoes either.

What a trial keeps is in this worker's memory only, and a restart or a rebalance loses it:
the shadow matchers of open runs (a run resumed from its record, here or on another worker,
is judged by the version in use alone and not compared) and the count of runs compared (a
restarted worker counts from 0, and each worker of a fleet counts its own). That is
acceptable because no verdict comes from the shadow version: the loss delays a promotion,
never hastens one (``shadow_runs`` runs compared by one worker), and leaves out of the
comparison the runs open at the moment, while later runs are compared and can still reject
it. Keeping a second matcher in every run's record would double the records during a trial.
"""
from __future__ import annotations

import copy
import logging

from stream.judging.metrics import Metrics
from stream.judging.records import RunRecord
from stream.models.registry import ModelRegistry
from trustlayer.judge.faults import feed_checked
from trustlayer.judge.matcher import Matcher
from trustlayer.judge.status import Status
from trustlayer.model import Model
from trustlayer.observe.trace_events import Event

log = logging.getLogger(__name__)


class ShadowTrials:
    """The shadow matchers of the runs a worker judges and the trial of each task's shadow
    version (runs compared so far, by version)."""

    def __init__(self, registry: ModelRegistry, metrics: Metrics, trial_runs: int):
        self.registry, self.metrics, self.trial_runs = registry, metrics, trial_runs
        self.matchers: dict[str, Matcher] = {}
        self.compared: dict[tuple[str, int], int] = {}
        self.decided: set[tuple[str, int]] = set()  # trials this worker ended

    def start(self, run_id: str, task: str) -> int | None:
        """A run starts: judge it in shadow too if its task has a version on trial (its
        version is returned, for the run's record)."""
        shadow = self.registry.shadow(task)
        if shadow is None:
            return None
        self.matchers[run_id] = Matcher(shadow)
        return shadow.version

    def revoke(self) -> None:
        """Partitions were taken away: a run that comes back (to this worker or another)
        resumes from its record, and a shadow matcher kept from before would miss the events
        judged elsewhere meanwhile, so it is not compared."""
        self.matchers.clear()

    def feed(self, rec: RunRecord, event: Event) -> None:
        matcher = self.matchers.get(rec.run_id)
        if matcher is not None:
            feed_checked(matcher, event)

    def ended(self, rec: RunRecord, used: Status) -> Model | None:
        """The run ended with the final status `used`: compare it with the shadow's; the
        version to publish when that ends the trial (a promotion or a rejecting rollback)."""
        matcher = self.matchers.pop(rec.run_id, None)
        shadow = self.registry.shadow(rec.task)
        if matcher is None or matcher.status is None or shadow is None \
                or shadow.version != rec.shadow_version \
                or (rec.task, shadow.version) in self.decided:
            return None  # resumed after a restart, or the trial already ended
        trial = (rec.task, shadow.version)
        self.compared[trial] = self.compared.get(trial, 0) + 1
        self.metrics.shadow_runs.labels(rec.task).inc()
        verdict = matcher.status.verdict
        if verdict != used.verdict:
            self.metrics.shadow_disagreements.labels(rec.task, str(used.verdict),
                                                     str(verdict)).inc()
            log.warning("run %s: %s v%d says %s, v%d in shadow says %s", rec.run_id, rec.task,
                        rec.version, used.verdict, shadow.version, verdict)
            if verdict == "pass" and rec.outcome == "failure":
                self.decided.add(trial)
                return self._reject(shadow, rec.run_id)
        if self.compared[trial] >= self.trial_runs:
            self.decided.add(trial)
            return self._promote(shadow)
        return None

    def _promote(self, shadow: Model) -> Model:
        runs = shadow.history[-1].get("runs", [])
        log.info("%s v%d promoted after %d runs in shadow", shadow.task, shadow.version,
                 self.compared[shadow.task, shadow.version])
        return self.registry.derive(copy.copy(shadow), "promoted", parent=shadow,
                                    promoted=shadow.version, runs=runs)

    def _reject(self, shadow: Model, run_id: str) -> Model:
        log.warning("%s v%d in shadow rejected: it passes run %s, whose end says failure",
                    shadow.task, shadow.version, run_id)
        tried_against = shadow.history[-1]["parent"]
        return self.registry.rollback(shadow.task, tried_against, rejected_shadow=shadow.version,
                                      rejected_runs=shadow.history[-1].get("runs", []),
                                      because=run_id)
