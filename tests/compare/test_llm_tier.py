"""The LLM tier inside matching: never called by default, asked only about unsure pairs,
within the per-run budget, and its answer decides those pairs."""
import base64
import io

from PIL import Image, ImageDraw
from tracegen import as_run, events_for

from trustlayer.compare.llm import LLMJudge
from trustlayer.judge.matcher import judge_run
from trustlayer.learn.learner import learn
from trustlayer.settings import LLMSettings

SCREENS = ["Home\nWelcome", "Search dialog\nQuery", "Results\n3 items found", "Saved\nDone"]


def shot(index: int, jitter: int) -> str:
    image = Image.new("L", (160, 120), 255)
    draw = ImageDraw.Draw(image)
    draw.rectangle([10 + 30 * index, 10, 60 + 30 * index, 100], fill=0)
    draw.point([(150, 110 - jitter)], fill=0)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def run_with_shots(run_id: str, jitter: int, extra_line: str | None = None):
    texts = [t + (f"\n{extra_line}" if extra_line and i == 2 else "")
             for i, t in enumerate(SCREENS)]
    events = events_for(run_id, texts)
    index = 0
    for event in events:
        if event["kind"] == "state":
            event["observation"]["screenshot"] = shot(index, jitter)
            index += 1
    return as_run(events)


def model_and_unsure_run():
    model = learn([run_with_shots(f"train-{n}", n) for n in range(3)])
    # the results screen with one line no training run showed: the cheap tiers are unsure
    return model, run_with_shots("new", 5, extra_line="Sponsored")


def test_default_path_makes_zero_llm_calls(llm_server):
    model, run = model_and_unsure_run()
    assert not model.settings.llm.enabled
    status = judge_run(model, run, LLMJudge(LLMSettings(base_url=llm_server.base_url)))
    assert status.llm_calls == 0 and llm_server.requests == []
    assert status.verdict == "fail"  # unsure is different without the LLM


def test_enabled_tier_decides_unsure_pairs_within_budget(llm_server):
    model, run = model_and_unsure_run()
    model.settings.llm = LLMSettings(enabled=True, base_url=llm_server.base_url,
                                     max_calls_per_run=1, timeout_s=5)
    llm_server.behaviour = "same"
    status = judge_run(model, run, LLMJudge(model.settings.llm))
    assert status.verdict == "pass"
    assert status.llm_calls == 1 == len(llm_server.requests)
    llm_server.behaviour = "different"
    status = judge_run(model, run, LLMJudge(model.settings.llm))
    assert status.verdict == "fail" and status.llm_calls == 1


def test_clear_pairs_never_reach_the_llm(llm_server):
    model, _ = model_and_unsure_run()
    model.settings.llm = LLMSettings(enabled=True, base_url=llm_server.base_url)
    status = judge_run(model, run_with_shots("plain", 7), LLMJudge(model.settings.llm))
    assert status.verdict == "pass" and status.llm_calls == 0 and llm_server.requests == []
