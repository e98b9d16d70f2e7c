"""The LLM tier against a real local HTTP server speaking chat-completions."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from devsets import REPO
from llm_server import FakeLLMServer

from trustlayer.compare.llm import LLMAnswer, LLMJudge
from trustlayer.settings import LLMSettings

LEFT = "window: Editor\nfile: report.txt\nclock: 10:01"
RIGHT = "window: Editor\nfile: report.txt\nclock: 10:02"
PNG_L = b"\x89PNG\r\n\x1a\nleft-thumbnail"
PNG_R = b"\x89PNG\r\n\x1a\nright-thumbnail"


def make_judge(server: FakeLLMServer, **overrides: object) -> LLMJudge:
    settings = LLMSettings(enabled=True, base_url=server.base_url, model="test-model",
                           timeout_s=5.0)
    for name, value in overrides.items():
        setattr(settings, name, value)
    return LLMJudge(settings)


def test_yes_answer_and_request_body(llm_server: FakeLLMServer) -> None:
    judge = make_judge(llm_server)
    answer = judge.judge(LEFT, RIGHT, PNG_L, PNG_R)
    assert answer == LLMAnswer(True, "only the clock differs", cached=False, called=True)
    assert judge.calls == 1 and len(llm_server.requests) == 1
    body = llm_server.requests[0]
    assert body["model"] == "test-model"
    assert body["response_format"] == {"type": "json_object"}
    parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert len(images) == 2 and all(u.startswith("data:image/png;base64,") for u in images)
    texts = "\n".join(p["text"] for p in parts if p["type"] == "text")
    assert LEFT in texts and RIGHT in texts


def test_no_answer(llm_server: FakeLLMServer) -> None:
    llm_server.behaviour = "different"
    answer = make_judge(llm_server).judge(LEFT, RIGHT, None, None)
    assert answer == LLMAnswer(False, "another file name", called=True)
    content = llm_server.requests[0]["messages"][1]["content"]
    assert not any(p["type"] == "image_url" for p in content)


def test_cache_serves_repeat_and_swapped_pair(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    judge = make_judge(llm_server)
    judge.judge(LEFT, RIGHT, PNG_L, PNG_R)
    again = judge.judge(LEFT, RIGHT, PNG_L, PNG_R)
    swapped = judge.judge(RIGHT, LEFT, PNG_R, PNG_L)
    assert again == swapped == LLMAnswer(True, "only the clock differs", cached=True, called=False)
    assert judge.calls == 1 and len(llm_server.requests) == 1
    # a different thumbnail is a different question
    assert judge.judge(LEFT, RIGHT, PNG_L, PNG_L).called
    assert len(llm_server.requests) == 2

    path = tmp_path / "cache.json"
    judge.save_cache(path)
    fresh = make_judge(llm_server)
    fresh.load_cache(path)
    assert fresh.judge(RIGHT, LEFT, PNG_R, PNG_L).cached
    assert fresh.calls == 0 and len(llm_server.requests) == 2


def test_garbage_is_different_and_not_cached(llm_server: FakeLLMServer) -> None:
    llm_server.behaviour = "garbage"
    judge = make_judge(llm_server)
    answer = judge.judge(LEFT, RIGHT, PNG_L, PNG_R)
    assert not answer.same and answer.called
    assert answer.reason.startswith("llm answer unusable:")
    assert not judge.judge(LEFT, RIGHT, PNG_L, PNG_R).cached
    assert judge.calls == 2


def test_http_500_is_different_and_not_cached(llm_server: FakeLLMServer) -> None:
    llm_server.behaviour = "error500"
    judge = make_judge(llm_server)
    answer = judge.judge(LEFT, RIGHT, PNG_L, PNG_R)
    assert not answer.same and answer.reason.startswith("llm error:")
    assert len(llm_server.requests) == 1  # max_retries=0
    llm_server.behaviour = "same"
    assert judge.judge(LEFT, RIGHT, PNG_L, PNG_R) == LLMAnswer(
        True, "only the clock differs", called=True)


def test_timeout_is_different(llm_server: FakeLLMServer) -> None:
    llm_server.behaviour = "slow"
    judge = make_judge(llm_server, timeout_s=0.5)
    answer = judge.judge(LEFT, RIGHT, PNG_L, PNG_R)  # (the server would answer "same" later)
    assert not answer.same and answer.reason.startswith("llm error:")
    assert len(llm_server.requests) == 1


def test_connection_refused_is_different() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    judge = LLMJudge(LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", timeout_s=2.0))
    answer = judge.judge(LEFT, RIGHT, None, None)
    assert not answer.same and answer.reason.startswith("llm error:")


def test_unused_judge_makes_no_client_and_no_request(llm_server: FakeLLMServer) -> None:
    judge = LLMJudge(LLMSettings(base_url=llm_server.base_url))
    assert judge.client is None and judge.calls == 0 and llm_server.requests == []
    code = ("import sys; from trustlayer.compare.llm import LLMJudge; "
            "from trustlayer.settings import LLMSettings; LLMJudge(LLMSettings()); "
            "assert 'openai' not in sys.modules")
    root = REPO
    subprocess.run([sys.executable, "-c", code], cwd=root, check=True)
