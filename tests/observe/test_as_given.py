"""What :func:`~trustlayer.observe.trace_events.as_given` makes, without the frozen classes'
``__init__``, is what that ``__init__`` makes: every event read, every state's fingerprint
and step."""
import dataclasses

from devsets import EXAMPLES

from trustlayer.learn.learner import learn
from trustlayer.observe.steps import StepBuilder
from trustlayer.observe.traces import read_runs

FOLDERS = [EXAMPLES / name / "test" for name in ("jupyter", "tool-calling", "conversation")]


def _as_init_makes(made) -> None:
    """`made` holds every field of its class, and equals what ``__init__`` makes of them."""
    cls = type(made)
    names = {f.name for f in dataclasses.fields(cls)}
    assert vars(made).keys() == names
    remade = cls(**{name: vars(made)[name] for name in names})
    assert vars(made) == vars(remade) and made == remade


def test_every_event_read_holds_what_its_init_makes():
    runs = read_runs(FOLDERS)
    events = [event for run in runs for event in run.events]
    assert {event.kind for event in events} == {"state", "action", "end"}
    for event in events:
        for made in (event, event.observation, event.action):
            if made is not None:
                _as_init_makes(made)


def test_every_states_fingerprint_and_step_hold_what_their_init_makes():
    settings = learn(read_runs([EXAMPLES / "jupyter" / "train"])).settings
    builder, steps = StepBuilder(settings), []
    for run in read_runs([EXAMPLES / "jupyter" / "test"])[:3]:
        steps += [step for event in run.events if (step := builder.feed(event)) is not None]
    assert steps
    for step in steps:
        _as_init_makes(step)
        _as_init_makes(step.fingerprint)
