"""A conversation is judged by what it changed and told (trustlayer.judge.effects): a change
no successful run made fails the moment the tool takes it, a change every successful run
made must be made, and from runs that changed nothing, what they all worked out and told."""
from __future__ import annotations

from typing import Any

import pytest

from trustlayer.judge.matcher import Matcher, judge_run
from trustlayer.judge.reasons import EXTRA_EFFECT, MISSING_EFFECT, UNTOLD_FACT
from trustlayer.learn.learner import learn
from trustlayer.model import Model
from trustlayer.observe.event_parsing import parse_event
from trustlayer.observe.trace_events import Run

Turn = tuple[Any, ...]


def conversation(run_id: str, turns: list[Turn], task: str = "refund") -> Run:
    """A run in the format's Conversations: ("user", text), ("say", text), ("call", tool,
    args, answer[, read_only])."""
    raw: list[dict[str, Any]] = []

    def add(kind: str, **body: Any) -> None:
        raw.append({"v": 1, "run_id": run_id, "task": task, "seq": len(raw),
                    "ts": 100.0 + len(raw), "kind": kind, **body})
    for turn in turns:
        if turn[0] == "user":
            add("state", observation={"text": turn[1]})
        elif turn[0] == "say":
            add("action", action={"type": "message", "target": "user", "value": turn[1]})
        else:
            action = {"type": "tool", "target": turn[1], "args": turn[2]}
            if len(turn) > 4:
                action["read_only"] = turn[4]
            add("action", action=action)
            add("state", observation={"text": turn[3]})
    add("end", outcome="unknown")
    return Run(run_id, task, [parse_event(e) for e in raw])


LOOKUP = ("call", "get_order", {"order_id": "A17"}, '{"order_id": "A17", "total": 40}', True)
REFUND = ("call", "refund", {"order_id": "A17", "amount": 40}, '{"refunded": 40}', False)
HANDOVER = ("call", "hand_over", {"summary": "Customer wants a refund of order A17 now"},
            "Transfer successful", False)


def success(number: int, *extra: Turn) -> Run:
    greeting = ("user", f"Hi, order A17 arrived broken (try {number}).")
    return conversation(f"ok-{number}", [greeting, ("say", "Let me check."), LOOKUP,
                                         *extra, REFUND, ("say", "Refunded 40 to you."),
                                         ("user", "Thanks!")])


@pytest.fixture(scope="module")
def model() -> Model:
    return learn([success(1), success(2, ("say", "One moment please.")), success(3)])


def test_a_success_worded_otherwise_with_other_reads_passes(model):
    run = conversation("other-words", [("user", "My order A17 is broken, refund it."),
                                       REFUND, ("say", "Done: 40 back."), ("user", "bye")])
    status = judge_run(model, run)
    assert status.status == "passed", status.reason
    assert status.coverage == 1.0 and status.matched == ["refund A17"]


def test_a_change_no_successful_run_made_fails_when_the_tool_takes_it(model):
    coupon = ("call", "send_coupon", {"user": "u1", "amount": 100}, "Coupon c-991 sent", False)
    run = conversation("coupon", [("user", "Broken order A17."), REFUND, coupon,
                                  ("say", "I also sent you a coupon."), ("user", "Great")])
    matcher = Matcher(model)
    verdicts = [matcher.feed(event).status for event in run.events]
    assert verdicts[4] == "failed" and matcher.current.final  # the coupon's answer, seq 4
    assert matcher.current.code == EXTRA_EFFECT and matcher.current.cause == "agent_error"
    assert "send_coupon" in matcher.current.reason


def test_a_change_made_with_other_values_fails_naming_the_expected_one(model):
    other = ("call", "refund", {"order_id": "B99", "amount": 40}, '{"refunded": 40}', False)
    status = judge_run(model, conversation("other-order", [("user", "Refund A17"), other,
                                                           REFUND, ("say", "Done")]))
    assert status.status == "failed" and status.code == EXTRA_EFFECT
    assert "'A17'" in status.reason and "'B99'" in status.reason


def test_a_required_change_never_made_is_the_agents_error(model):
    status = judge_run(model, conversation("no-refund", [("user", "Refund A17"), LOOKUP,
                                                         ("say", "Refunded!"), ("user", "ok")]))
    assert (status.status, status.code, status.cause) == ("failed", MISSING_EFFECT, "agent_error")
    assert status.missing == ["refund A17"] and status.coverage == 0.0


def test_a_required_change_the_tool_refused_is_the_products_fault(model):
    refused = REFUND[:3] + ("Error: the payment service is down",) + REFUND[4:]
    status = judge_run(model, conversation("refused", [("user", "Refund A17"), refused,
                                                       ("say", "Sorry, it failed.")]))
    assert (status.status, status.code, status.cause) == ("failed", MISSING_EFFECT, "product_bug")
    assert "payment service is down" in status.reason


def test_a_retry_the_tool_refused_and_a_hand_over_in_own_words_pass(model):
    refused = ("call", "refund", {"order_id": "A17", "amount": 400}, "Error: over the total",
               False)
    run = conversation("retry", [("user", "Refund A17"), refused, REFUND, HANDOVER,
                                 ("say", "Refunded, and a colleague will call you.")])
    assert judge_run(model, run).status == "passed"


def test_a_tool_of_unknown_effect_may_change_things():
    unknown = ("call", "get_order", {"order_id": "A17"}, '{"total": 40}')  # no read_only
    learned = learn([success(1), success(2)])
    run = conversation("unknown-read", [("user", "Refund A17"), unknown, REFUND, ("say", "ok")])
    status = judge_run(learned, run)
    assert status.status == "failed" and status.code == EXTRA_EFFECT


def test_runs_that_changed_nothing_must_tell_what_they_all_worked_out():
    def bags(run_id: str, answer: str) -> Run:
        return conversation(run_id, [("user", "How many bags can we take?"),
                                     ("call", "get_booking", {"id": "JM1"},
                                      '{"passengers": 2, "cabin": "economy"}', True),
                                     ("say", answer), ("user", "Thanks ###STOP###")], "bags")
    learned = learn([bags("b1", "2 passengers with 2 bags each: 4 bags."),
                     bags("b2", "You may take 4 bags in all.")])
    assert learned.effects is not None and learned.effects.told == ("4",)
    assert judge_run(learned, bags("b3", "In total 4 checked bags.")).status == "passed"
    wrong = judge_run(learned, bags("b4", "You may take 6 bags in all."))
    assert (wrong.status, wrong.code, wrong.cause) == ("failed", UNTOLD_FACT, "agent_error")


def test_a_model_of_conversations_round_trips_and_has_no_turn_milestones(model, tmp_path):
    assert model.essential == [] and model.effects is not None
    model.save(tmp_path / "m.json")
    assert Model.load(tmp_path / "m.json") == model


def test_a_change_answered_in_words_no_successful_change_got_took_nothing(model):
    denied = REFUND[:3] + ("permission denied: refunds are locked",) + REFUND[4:]
    status = judge_run(model, conversation("denied", [("user", "Refund A17"), denied,
                                                      ("say", "Refunded!")]))
    assert (status.status, status.code, status.cause) == ("failed", MISSING_EFFECT, "product_bug")
    assert "permission denied" in status.reason


def test_a_change_of_another_record_fails_whatever_its_answer_says(model):
    """Its answer holds another record's data (words no successful run's answer held): it
    was taken all the same, and it is a change none of them made."""
    other = ("call", "refund", {"order_id": "B99", "amount": 40},
             '{"refunded": 40, "customer": "Mallory Jones"}', False)
    status = judge_run(model, conversation("other", [("user", "Refund A17"), REFUND, other,
                                                     ("say", "Done")]))
    assert (status.status, status.code) == ("failed", EXTRA_EFFECT)
