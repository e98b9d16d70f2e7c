"""`trustlayer report` (self-contained HTML, checked in headless Chromium) and
`trustlayer show --png`, on real JupyterLab and coding traces."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from devsets import DATA, DEVTRACES, EXAMPLES, SHARED
from PIL import Image

from trustlayer.cli import main
from trustlayer.judge.phases import phases
from trustlayer.learn.learner import learn
from trustlayer.observe.traces import load_labels, read_run, read_runs

EXAMPLES_TEST = EXAMPLES / "jupyter" / "test"
JUPYTER = SHARED / "jupyter-dev"
PASSES, PRODUCT_BUG, AGENT_ERROR, NEGATIVE_SOURCE = (
    JUPYTER / "test" / f"jl-save-textfile-test-{n:02d}.jsonl" for n in (5, 1, 2, 16))
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--enable-logging=stderr", "--v=0", "--log-level=0"]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> Path:
    """The JupyterLab model, with negative milestones from one labelled failed run."""
    failed = read_run(NEGATIVE_SOURCE)
    cause = load_labels(JUPYTER / "test")[failed.run_id]["cause"]
    model = learn(read_runs([JUPYTER / "train"]) + [failed], causes={failed.run_id: cause})
    assert model.negative, "the failed run should give negative milestones"
    path = tmp_path_factory.mktemp("model") / "model.json"
    model.save(path)
    return path


@pytest.fixture(scope="module")
def report(model_file, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["-q", "report", str(model_file), str(PASSES), str(PRODUCT_BUG),
                 str(AGENT_ERROR), "-o", str(out)]) == 0
    return out


class Page(HTMLParser):
    """Every tag with its attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def classes(page: Page, tag: str) -> list[set[str]]:
    return [set(a.get("class", "").split()) for t, a in page.tags if t == tag]


@DEVTRACES
def test_report_is_self_contained(report):
    page = parse(report)
    assert not [a for t, a in page.tags if t == "script"], "the report needs no script"
    for tag, attrs in page.tags:
        for name in ("src", "href"):
            value = attrs.get(name)
            if value is not None:
                assert value.startswith(("data:", "#")), \
                    f"<{tag} {name}={value[:60]}> leaves the file"
    images = [a for t, a in page.tags if t in ("img", "image")]
    assert len(images) > 20 and all(
        (a.get("src") or a.get("href")).startswith("data:image/") for a in images)


@DEVTRACES
def test_report_shows_the_model(report, model_file):
    from trustlayer.model import Model
    model = Model.load(model_file)
    page = parse(report)
    nodes = [c for c in classes(page, "g") if "node" in c]
    assert sum("essential" in c for c in nodes) == len(model.essential) - len(model.soft)
    assert sum("soft" in c for c in nodes) == len(model.soft)
    assert sum("negative" in c for c in nodes) == len(model.negative)
    assert sum("optional" in c for c in nodes) == len(model.optional)
    assert sum("converge" in c for c in classes(page, "g")) >= 1
    assert sum("band" in c for c in classes(page, "rect")) == len(phases(model))
    text = " ".join(page.text)
    for phase in phases(model):
        assert phase.name in text


@DEVTRACES
def test_report_shows_each_run_and_the_divergence(report):
    page = parse(report)
    text = " ".join(" ".join(page.text).split())
    runs = {a["id"]: (c, "open" in a) for (t, a), c in zip(
        [(t, a) for t, a in page.tags if t == "details"], classes(page, "details"))
        if "run" in c}
    assert runs == {"jl-save-textfile-test-05": ({"run", "pass"}, False),  # folded
                    "jl-save-textfile-test-01": ({"run", "fail"}, True),
                    "jl-save-textfile-test-02": ({"run", "fail"}, True)}
    assert text.count(": expected and shown") == 2
    assert text.count("the run showed instead") == 4  # each beside expected, and full size
    assert "expected: 'untitled.txt: Saving completed'" in text
    assert "failed in phase 'Saving completed' after 'hello world'" in text
    assert "product_bug" in text and "agent_error" in text
    assert sum("diverged" in c for c in classes(page, "figure")) == 2
    # the divergence frame is the event the reason names: its step, in the heading too
    headings = {a["id"]: a["data-seq"] for t, a in page.tags if t == "h4" and "data-seq" in a}
    frames = [a["data-seq"] for (t, a), c in zip([(t, a) for t, a in page.tags if t == "figure"],
                                                 classes(page, "figure")) if "diverged" in c]
    assert sorted(headings.values()) == sorted(frames)
    for run_id, seq in headings.items():
        assert f"Failed at step {seq}:" in text
        assert f'href="#{run_id}"' in report.read_text()  # linked from the top of the page
    assert sum("milestone" in c for c in classes(page, "figure")) >= 3
    assert re.search(r"equivalence\s*: different by tier", text)
    assert "Decisions to check" in text
    assert sum("doubts" in c for c in classes(page, "details")) >= 1  # folded tables
    assert [a for t, a in page.tags if t == "input" and a.get("id") == "only-failed"]
    assert "body:has(#only-failed:checked) .run.pass" in report.read_text()


def chromium() -> str:
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.fail("headless Chromium is needed to test the HTML report: install the Debian "
                    "package with `apt-get install -y chromium` (.ci/run does)")
    return binary


def render(page: Path, tmp_path: Path, size: str = "1400,1800") -> tuple[np.ndarray, list[str]]:
    """Screenshot of `page` in headless Chromium and the console messages it logged."""
    shot = tmp_path / f"{page.stem}.png"
    done = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                           f"--window-size={size}", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return np.asarray(Image.open(shot).convert("RGB")), console


def test_console_check_catches_a_broken_page(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><link rel="icon" href="data:,"><p>x</p>'
                      "<script>missingFunction();</script>")
    _, console = render(broken, tmp_path, "400,300")
    assert any("Uncaught ReferenceError" in line for line in console), console


@DEVTRACES
def test_report_renders_in_chromium(report, tmp_path):
    pixels, console = render(report, tmp_path, "1400,3200")  # the graph and a first run
    assert console == [], console
    assert pixels.std() > 20, "the screenshot is blank"
    blue = np.all(np.abs(pixels.astype(int) - (9, 105, 218)) < 40, axis=-1)
    red = np.all(np.abs(pixels.astype(int) - (207, 34, 46)) < 40, axis=-1)
    assert blue.sum() > 200 and red.sum() > 50, "milestones (blue) and failures (red) not drawn"


@DEVTRACES
def test_show_png_draws_the_graph(model_file, tmp_path, capsys):
    out = tmp_path / "graph.png"
    assert main(["show", str(model_file), "--png", str(out)]) == 0
    assert "essential chain" in capsys.readouterr().out
    image = np.asarray(Image.open(out).convert("RGB")).astype(int)
    assert image.shape[1] > image.shape[0] > 200  # left to right
    assert image.std() > 20
    assert np.all(np.abs(image - (9, 105, 218)) < 30, axis=-1).sum() > 500  # essential
    assert np.all(np.abs(image - (207, 34, 46)) < 30, axis=-1).sum() > 200  # negative
    from trustlayer.model import Model
    from trustlayer.show.html import graph_svg
    svg = str(graph_svg(Model.load(model_file)))  # the report's drawing, not a second one
    width, height = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg).groups()
    assert image.shape[:2] == (int(height), int(width))


def test_text_only_report(tmp_path):
    coding = DATA / "slugify-fix-regex-bug"
    model = learn(read_runs([coding / "train"]))
    model.save(tmp_path / "model.json")
    out = tmp_path / "coding.html"
    run = coding / "test" / "slugify-fix-regex-bug-test-10.jsonl"
    assert main(["-q", "report", str(tmp_path / "model.json"), str(run), "-o", str(out)]) == 0
    page = parse(out)
    text = " ".join(" ".join(page.text).split())
    assert "the run showed instead" in text and "pytest" in text
    assert not [a for t, a in page.tags if t in ("img", "image")]  # no screenshots, text only
    assert main(["show", str(tmp_path / "model.json"), "--png", str(tmp_path / "g.png")]) == 0


@DEVTRACES
def test_a_negative_milestone_is_shown_beside_the_frame(tmp_path):
    failed = [read_run(JUPYTER / "test" / "jl-save-textfile-test-02.jsonl")]
    model = learn(read_runs([JUPYTER / "train"]) + failed,
                  causes={failed[0].run_id: "agent_error"})
    model.save(tmp_path / "model.json")
    out = tmp_path / "negative.html"
    assert main(["-q", "report", str(tmp_path / "model.json"), str(JUPYTER / "test" /
                 "jl-save-textfile-test-02.jsonl"), "-o", str(out)]) == 0
    text = " ".join(" ".join(parse(out).text).split())
    assert re.search(r"negative milestone '[^']+' appeared", text)
    assert re.search(r"negative milestone '[^']+' \(seen in failed runs\)", text)


def measure_in_chromium(page: Path, tmp_path: Path, width: int) -> tuple[int, int]:
    """(document width, window width) of `page` laid out in Chromium at `width` pixels."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>document.title = document.documentElement.scrollWidth + 'x' + "
        "window.innerWidth;</script></body>"), encoding="utf-8")
    done = subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'p'}",
                           f"--window-size={width},900", "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=120)
    found = re.search(r"<title>(\d+)x(\d+)</title>", done.stdout)
    assert found, done.stdout[:500] + done.stderr[-1000:]
    return int(found.group(1)), int(found.group(2))


@DEVTRACES
def test_nothing_overflows_the_window_to_the_right(report, tmp_path):
    document, window = measure_in_chromium(report, tmp_path, 1000)
    assert document <= window, f"the page is {document} px wide in a {window} px window"


@DEVTRACES
def test_expected_state_is_a_real_screen_with_the_training_runs(model_file, tmp_path):
    without, with_train = tmp_path / "thumb.html", tmp_path / "real.html"
    assert main(["-q", "report", str(model_file), str(PRODUCT_BUG), "-o", str(without)]) == 0
    assert main(["-q", "report", str(model_file), str(PRODUCT_BUG), "-o", str(with_train),
                 "--train", str(JUPYTER / "train")]) == 0

    def expected_figure(path: Path) -> tuple[set[str], str]:
        html_text = path.read_text(encoding="utf-8")
        figure = html_text[html_text.index("<figcaption>expected: "):]
        figure = figure[: figure.index("</figure>")]
        img = re.search(r'<img( class="thumbnail")? alt="[^"]*" src="data:image/(\w+);', figure)
        assert img, figure[:300]
        return ({"thumbnail"} if img.group(1) else set()), figure

    classes_without, figure = expected_figure(without)
    assert classes_without == {"thumbnail"} and "--train" in figure
    classes_with, figure = expected_figure(with_train)
    assert classes_with == set() and "jl-save-textfile-train-" in figure


@DEVTRACES
def test_the_deciding_words_are_marked_as_a_diff(model_file, tmp_path):
    out = tmp_path / "diff.html"
    hello_word = EXAMPLES_TEST / "jl-save-textfile-test-14.jsonl"  # typed 'hello word'
    assert main(["-q", "report", str(model_file), str(hello_word), "-o", str(out)]) == 0
    html_text = out.read_text(encoding="utf-8")
    assert re.search(r"hello <del>world</del></div><div><span class=\"label\">showed</span> "
                     r"hello <ins>word</ins>", html_text)
    diff = html_text[html_text.index('<div class="diff">'):]
    diff = re.sub(r"<[^>]+>", "", diff[: diff.index("equivalence")])
    # the screens first, their text difference under them
    assert html_text.index('<div class="compare">') < html_text.index('<div class="diff">')
    assert "Ln 1, Col 12" in diff and " , " not in diff, "text, not tokens"


@DEVTRACES
def test_failures_come_first_under_a_summary_and_the_model_is_folded(report):
    html_text = report.read_text(encoding="utf-8")
    summary = html_text[html_text.index('<div class="summary'):]
    summary = " ".join(re.sub(r"<[^>]+>", " ", summary[: summary.index("</div>")]).split())
    assert summary == "2 failed 1 passed 1 agent error 1 product bug"
    order = [html_text.index(mark) for mark in
             ('<div class="summary', '<table class="runs">', '<details class="run fail"',
              '<details class="run pass"', '<section id="model">')]
    assert order == sorted(order)
    table = html_text[html_text.index('<table class="runs">'):]
    verdicts = re.findall(r'<tr class="(pass|fail)">', table[: table.index("</table>")])
    assert verdicts == ["fail", "fail", "pass"]
    model = html_text[html_text.index('<section id="model">'):]
    assert model.startswith('<section id="model"><details class="model">')  # folded
    assert '<div class="scroll graph-fit"><svg' in model and "viewBox=" in model
    assert ".graph-fit svg { width: 100%" in html_text


@DEVTRACES
def test_screens_open_at_full_resolution_beside_their_pixel_difference(model_file, tmp_path):
    import base64
    import io

    from trustlayer.observe.traces import read_run as read
    out = tmp_path / "full.html"
    assert main(["-q", "report", str(model_file), str(PRODUCT_BUG), "-o", str(out),
                 "--train", str(JUPYTER / "train")]) == 0
    html_text = out.read_text(encoding="utf-8")
    boxes = re.findall(r'<div class="lightbox" id="([^"]+)">.*?<img alt="([^"]*)" '
                       r'src="data:image/(\w+);base64,([^"]+)">', html_text)
    captions = [caption for _, caption, _, _ in boxes]
    assert captions[0].startswith("expected: ") and captions[1].startswith("the run showed")
    assert re.fullmatch(r"difference: \d+\.\d% of the pixels differ \(red\)", captions[2])
    for anchor, *_ in boxes:
        assert f'<a class="open" href="#{anchor}"' in html_text
    shown = Image.open(io.BytesIO(base64.b64decode(boxes[1][3])))
    divergence = [e for e in read(PRODUCT_BUG).events if e.observation and
                  e.observation.screenshot][-1].observation.screenshot.gray()
    assert shown.size[0] >= 1000 and shown.size[0] / shown.size[1] == pytest.approx(
        divergence.size[0] / divergence.size[1], rel=0.02), "the screen at its own size"
    diff = np.asarray(Image.open(io.BytesIO(base64.b64decode(boxes[2][3]))).convert("RGB"))
    red = np.all(diff == (255, 0, 0), axis=-1)
    assert diff.shape[:2] == shown.size[::-1] and 0 < red.mean() < 1
    assert ".lightbox:target { display: block;" in html_text


def test_everything_from_the_runs_is_escaped(tmp_path):
    from tracegen import events_for, make_screens, write_run
    train = tmp_path / "train"
    train.mkdir()
    for number in range(2):
        write_run(train, events_for(f"train-{number}", make_screens(number)))
    hostile = events_for("<script>alert(1)</script>", make_screens(3)[:2] +
                         ['<img src=x onerror="alert(2)"> </pre><b>bold</b>'])
    run = tmp_path / "hostile.jsonl"
    run.write_text("".join(json.dumps(event) + "\n" for event in hostile))
    assert main(["-q", "learn", str(train), "-o", str(tmp_path / "m.json")]) == 0
    assert main(["-q", "report", str(tmp_path / "m.json"), str(run), "-o",
                 str(tmp_path / "r.html")]) == 0
    page = parse(tmp_path / "r.html")
    assert not [a for t, a in page.tags if t == "script" or "onerror" in a]
    text = " ".join(page.text)
    assert "<script>alert(1)</script>" in text and "<b>bold</b>" in text
    assert '<img src=x onerror="alert(2)">' in text


def test_on_a_phone_nothing_is_cut_off_and_the_first_failure_is_near(report):
    """390 pixels wide (a phone; Playwright, since headless Chromium's own window is never
    narrower than 500): the page is no wider, and the first failed run's expected and
    shown screens begin within two screens."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(report.as_uri())
        wide, window, compare = page.evaluate(
            "[document.documentElement.scrollWidth, innerWidth, "
            "document.querySelector('.compare').getBoundingClientRect().top]")
        browser.close()
    assert wide <= window == 390, f"the page is {wide} px wide on a 390 px phone"
    assert compare < 2 * 844, f"the first comparison begins {compare:.0f} px down"
