"""trustlayer learns what success looks like from a few successful runs of an agent's task
and judges new runs: pass or fail, how far they got, a reason, and for a failure whether
the product or the agent is to blame.

The stages, one package each: ``observe`` (traces to canonical lines), ``compare`` (is an
observed state a model state?), ``learn`` (successful runs to a model), ``judge`` (a run
against a model), ``show`` (reports, pictures, CI forms) and ``score`` (verdicts against
labels). The public API::

    from trustlayer import learn, judge_run, read_runs
    model = learn(read_runs(["examples/jupyter/train"]))
    status = judge_run(model, read_runs(["examples/jupyter/test"])[0])
    print(status.verdict, status.reason, status.cause)
"""
from trustlayer.errors import ModelError, TraceError, UsageError
from trustlayer.judge.matcher import Matcher, Status, judge_run
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.traces import Run, read_run, read_runs
from trustlayer.settings import Settings

__all__ = ["Matcher", "Model", "ModelError", "Run", "Settings", "Status", "TraceError",
           "UsageError", "judge_run", "learn", "read_run", "read_runs"]
