"""trustlayer learns what success looks like from a few successful runs of an agent's task
and judges new runs: pass or fail, how far they got, a reason, and for a failure whether
the product or the agent is to blame.

The stages, one package each: ``observe`` (traces to canonical lines), ``compare`` (is an
observed state a model state?), ``learn`` (successful runs to a model), ``judge`` (a run
against a model), ``show`` (reports, pictures, CI forms) and ``score`` (verdicts against
labels). The public API, loaded on first use (importing one stage, as a runner that
fingerprints its frames does, does not load them all)::

    from trustlayer import judge_run, learn_model, read_runs
    model = learn_model(read_runs(["examples/jupyter/train"]))
    status = judge_run(model, read_runs(["examples/jupyter/test"])[0])
    print(status.verdict, status.reason, status.cause)

``learn_model`` is :func:`trustlayer.learn.learner.learn` (``trustlayer.learn`` is the
learning stage's package).
"""
from importlib import import_module
from typing import Any

# public name -> (the module that defines it, its name there)
_PUBLIC = {"ModelError": ("trustlayer.errors", "ModelError"),
           "TraceError": ("trustlayer.errors", "TraceError"),
           "UsageError": ("trustlayer.errors", "UsageError"),
           "Matcher": ("trustlayer.judge.matcher", "Matcher"),
           "Status": ("trustlayer.judge.status", "Status"),
           "judge_run": ("trustlayer.judge.matcher", "judge_run"),
           "learn_model": ("trustlayer.learn.learner", "learn"),
           "Model": ("trustlayer.model", "Model"),
           "Run": ("trustlayer.observe.trace_events", "Run"),
           "read_run": ("trustlayer.observe.traces", "read_run"),
           "read_runs": ("trustlayer.observe.traces", "read_runs"),
           "Settings": ("trustlayer.settings", "Settings")}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'trustlayer' has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    return getattr(import_module(module), attribute)
