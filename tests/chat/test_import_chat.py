"""`trustlayer import chat`: OpenAI chat-completions message lists (and tau-bench
trajectories) become runs in the conversation convention that `learn` and `validate` read;
every file shape the command takes; bad logs are one line naming the file and the message,
exit 2."""
from __future__ import annotations

import json

import pytest
from devsets import SHARED

from trustlayer.cli import main
from trustlayer.observe.traces import read_run, read_runs

SYSTEM = {"role": "system", "content": "You are a support agent."}


def call(call_id: str, name: str, **arguments: object) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def conversation(order: str = "42", effect: str = "cancel_order") -> list[dict]:
    """A customer asks to cancel an order; the agent looks it up, acts, answers."""
    return [SYSTEM,
            {"role": "user", "content": f"Cancel my order {order}, please."},
            {"role": "assistant", "content": None,
             "tool_calls": [call("c1", "get_order", order_id=order)]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "open"}'},
            {"role": "assistant", "content": "Cancelling it now.",
             "tool_calls": [call("c2", effect, order_id=order, reason="not needed")]},
            {"role": "tool", "tool_call_id": "c2", "content": f"order {order}: done"},
            {"role": "assistant",
             "content": [{"type": "text", "text": f"Order {order} is done."}]}]


def run_import(*args: str) -> int:
    return main(["-q", "import", "chat", *map(str, args)])


def test_a_conversation_becomes_states_messages_and_tool_calls(tmp_path):
    (tmp_path / "support.json").write_text(json.dumps(conversation()))
    assert run_import(tmp_path / "support.json", "-o", tmp_path / "runs",
                      "--read-only", "get_*, search_*") == 0
    run = read_run(tmp_path / "runs" / "support.jsonl")
    assert run.task == "support" and run.outcome == "unknown"
    assert [(e.kind, e.action and e.action.type) for e in run.events] == [
        ("state", None), ("action", "tool"), ("state", None), ("action", "message"),
        ("action", "tool"), ("state", None), ("action", "message"), ("end", None)]
    assert run.events[0].observation.text == "Cancel my order 42, please."
    lookup, cancel = run.events[1].action, run.events[4].action
    assert (lookup.target, lookup.value, lookup.args, lookup.read_only) == (
        "get_order", "42", {"order_id": "42"}, True)
    assert (cancel.target, cancel.read_only) == ("cancel_order", False)
    assert run.events[5].observation.text == "order 42: done"
    assert (run.events[6].action.target, run.events[6].action.value) == ("user",
                                                                          "Order 42 is done.")
    assert [e.ts for e in run.events] == sorted({e.ts for e in run.events})


def test_without_read_only_patterns_the_effect_is_unknown(tmp_path):
    (tmp_path / "support.json").write_text(json.dumps(conversation()))
    assert run_import(tmp_path / "support.json", "-o", tmp_path / "runs") == 0
    tools = [e for e in read_run(tmp_path / "runs" / "support.jsonl").events
             if e.action and e.action.type == "tool"]
    assert [("read_only" in e.raw["action"], e.action.read_only) for e in tools] == [
        (False, None), (False, None)]


def test_every_file_shape_makes_one_run_per_list(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "lists.json").write_text(json.dumps([conversation("1"), conversation("2")]))
    (logs / "objects.json").write_text(json.dumps({"messages": conversation("3")}))
    (logs / "lines.jsonl").write_text(json.dumps(conversation("4")) + "\n\n"
                                      + json.dumps({"messages": conversation("5")}) + "\n")
    (logs / "notes.txt").write_text("not a log")
    assert run_import(logs, "-o", tmp_path / "runs", "--task", "cancel") == 0
    runs = {run.run_id: run for run in read_runs([tmp_path / "runs"])}
    assert sorted(runs) == ["lines-0", "lines-1", "lists-0", "lists-1", "objects"]
    assert {run.task for run in runs.values()} == {"cancel"}
    assert runs["lines-1"].events[0].observation.text == "Cancel my order 5, please."


def test_tau_bench_trajectories_carry_their_task_and_reward(tmp_path):
    results = [{"task_id": 7, "trial": 0, "reward": 1.0, "traj": conversation("7")},
               {"task_id": 7, "trial": 1, "reward": 0.0, "traj": conversation("7", "refund")}]
    (tmp_path / "gpt-4o-airline.json").write_text(json.dumps(results))
    assert run_import(tmp_path / "gpt-4o-airline.json", "-o", tmp_path / "runs") == 0
    runs = {run.run_id: run for run in read_runs([tmp_path / "runs"])}
    assert {(rid, run.task, run.outcome) for rid, run in runs.items()} == {
        ("gpt-4o-airline-0", "gpt-4o-airline-7", "success"),
        ("gpt-4o-airline-1", "gpt-4o-airline-7", "failure")}


def test_imported_runs_learn_and_validate(tmp_path, capsys):
    for name, order in (("a", "10"), ("b", "11"), ("c", "12")):
        (tmp_path / f"{name}.json").write_text(json.dumps(conversation(order)))
    assert run_import(tmp_path / "a.json", tmp_path / "b.json", "-o", tmp_path / "train",
                      "--task", "cancel", "--read-only", "get_*") == 0
    assert run_import(tmp_path / "c.json", "-o", tmp_path / "test", "--task", "cancel",
                      "--read-only", "get_*") == 0
    assert main(["-q", "learn", str(tmp_path / "train"), "-o", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    assert main(["-q", "validate", str(tmp_path / "m.json"), str(tmp_path / "train"),
                 str(tmp_path / "test"), "--format", "json"]) in (0, 1)
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(v["run_id"] for v in verdicts) == ["a", "b", "c"]


BAD = [
    ("[{\"role\": \"user\", ", "", "not valid JSON"),
    (json.dumps([SYSTEM, "hello"]), "", "message 1: a message must be an object, got str"),
    (json.dumps([SYSTEM, {"role": "robot", "content": "x"}]), "",
     "message 1: role 'robot' is not one of"),
    (json.dumps([{"role": "assistant", "tool_calls": [{"id": "1", "function": {}}]}]), "",
     "message 0: a tool call needs function.name"),
    (json.dumps([{"role": "assistant", "tool_calls": [
        {"id": "1", "function": {"name": "f", "arguments": 3}}]}]), "",
     "message 0: function.arguments must be a JSON string"),
    (json.dumps([{"role": "user", "content": "hi"},
                 {"role": "tool", "tool_call_id": "x9", "content": "ok"}]), "",
     "message 1: tool_call_id 'x9' answers no earlier tool call"),
    (json.dumps([{"role": "assistant", "tool_calls": {"id": "1"}}]), "",
     "message 0: tool_calls must be a list"),
    (json.dumps([{"role": "user", "content": {"text": "hi"}}]), "",
     "message 0: content must be a string or a list of parts, got dict"),
    (json.dumps([conversation(), [SYSTEM, {"role": "user", "content": 5}]]), "",
     "conversation 1, message 1: content must be a string"),
    (json.dumps([SYSTEM]), "", "no user, assistant or tool message"),
    (json.dumps({"turns": []}), "", "expected a list of messages or an object with a "
     "'messages' list, got dict"),
    (json.dumps(conversation()) + "\n" + json.dumps([{"role": "user"}, 7]), "l",
     ":2: message 1: a message must be an object"),
    ("\n\n", "l", "no messages in file"),
]


@pytest.mark.parametrize(("content", "jsonl", "problem"), BAD)
def test_a_bad_log_is_one_line_naming_file_and_message_exit_2(tmp_path, capsys, content,
                                                               jsonl, problem):
    path = tmp_path / ("log.jsonl" if jsonl else "log.json")
    path.write_text(content)
    assert run_import(path, "-o", tmp_path / "runs") == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"trustlayer import: error: {path}")
    assert problem in error and "\n" not in error and "Traceback" not in error
    assert not (tmp_path / "runs").exists()  # nothing half written


def test_read_only_without_patterns_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "support.json").write_text(json.dumps(conversation()))
    assert run_import(tmp_path / "support.json", "-o", tmp_path / "runs",
                      "--read-only", " , ") == 2
    assert "--read-only: give the tools" in capsys.readouterr().err


def as_messages(run) -> list[dict]:
    """A run in the conversation convention written back as the message list it came
    from: a state after a tool call is its result, any other state the user speaking."""
    messages: list[dict] = [SYSTEM]
    for previous, event in zip([None, *run.events], run.events):
        if event.kind == "state" and previous is not None and previous.kind == "action" \
                and previous.action.type == "tool":
            messages.append({"role": "tool", "tool_call_id": f"c{previous.seq}",
                             "content": event.observation.text})
        elif event.kind == "state":
            messages.append({"role": "user", "content": event.observation.text})
        elif event.kind == "action" and event.action.type == "message":
            messages.append({"role": "assistant", "content": event.action.value})
        elif event.kind == "action":
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{event.seq}", "type": "function", "function": {
                    "name": event.action.target, "arguments": json.dumps(event.action.args)}}]})
    return messages


def test_the_tau_airline_dev_runs_are_what_import_chat_makes(tmp_path):
    """The shared tau-bench runs, written back as message lists, import to the same events
    (all but the times): the command makes runs in the shape the dev set was judged in."""
    folders = sorted((SHARED / "tau-airline-dev").glob("tau-airline-*-all/*"))
    runs = read_runs([folder for folder in folders if folder.is_dir()])
    assert len(runs) >= 20  # successes and failures of several tasks
    reads = ",".join(sorted({e.action.target for run in runs for e in run.events
                             if e.action and e.action.read_only}))
    for run in runs:
        (tmp_path / f"{run.run_id}.json").write_text(json.dumps(as_messages(run)))
        assert run_import(tmp_path / f"{run.run_id}.json", "-o", tmp_path / "runs",
                          "--task", run.task, "--read-only", reads) == 0
        imported = read_run(tmp_path / "runs" / f"{run.run_id}.jsonl")
        assert [strip(e.raw) for e in imported.events[:-1]] == \
            [strip(e.raw) for e in run.events[:-1]]


def strip(raw: dict) -> dict:
    return {k: v for k, v in raw.items() if k not in ("ts",)}
