"""The optional multimodal LLM tier: asks a chat-completions model whether two
observations are the same state of the application.

Only pairs the cheap tiers leave unsure come here, and only when the caller has the
tier enabled (``LLMSettings.enabled``) and budget left (``LLMJudge.calls`` against
``LLMSettings.max_calls_per_run``). The rule throughout: on any error or doubt the
answer is *different*; this module never raises for a failed or unusable answer.
"""
from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trustlayer.settings import LLMSettings

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletionContentPartParam

SYSTEM_PROMPT = """\
You compare two observations of a desktop or web application, each given as a \
canonical text (the visible text and structure of the screen) and, when available, \
a screenshot thumbnail. Decide whether they show the same state of the application \
for the purpose of checking a task's progress.
Ignore volatile details: clocks, dates, counters, ids, cursor position, theme, \
window size or position, scrolling.
Differences that matter: file names, typed or selected values, open dialogs, error \
or warning messages, command or program outputs, which page or view is shown.
If unsure, answer that they are not the same.
Reply with a JSON object only: {"same": true|false, "reason": "<one short sentence>"}."""


@dataclass(frozen=True)
class LLMAnswer:
    """The tier's verdict; ``called`` is True when an HTTP request was made for it."""

    same: bool
    reason: str
    cached: bool = False
    called: bool = False


def _side_digest(text: str, png: bytes | None) -> bytes:
    h = hashlib.sha256(b"png" if png is not None else b"nopng")
    for part in (text.encode("utf-8"), png or b""):
        h.update(len(part).to_bytes(8, "big") + part)
    return h.digest()


def _observation(label: str, text: str,
                 png: bytes | None) -> list[ChatCompletionContentPartParam]:
    parts: list[ChatCompletionContentPartParam] = [
        {"type": "text", "text": f"Observation {label}, canonical text:\n{text}"}]
    if png is not None:
        uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": uri}})
    return parts


def _parse(content: str | None) -> tuple[bool, str] | None:
    """``(same, reason)`` from a JSON object with a boolean ``same``, else None."""
    try:
        data = json.loads(content or "")
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("same"), bool):
        return None
    reason = data.get("reason")
    return data["same"], reason if isinstance(reason, str) else ""


class LLMJudge:
    """Judges pairs of observations with an OpenAI-compatible chat-completions API.

    The client is built on the first :meth:`judge` call, so constructing a judge for a
    disabled tier costs nothing. ``calls`` counts HTTP requests made. Real answers are
    cached in memory, keyed order-independently on the model and both observations;
    errors are not cached. On any error or doubt the answer is *different*.
    """

    def __init__(self, settings: LLMSettings, client: openai.OpenAI | None = None) -> None:
        self.settings = settings
        self.client = client
        self.calls = 0
        self.cache: dict[str, dict[str, Any]] = {}

    def _key(self, left_text: str, right_text: str,
             left_png: bytes | None, right_png: bytes | None) -> str:
        sides = sorted([_side_digest(left_text, left_png), _side_digest(right_text, right_png)])
        h = hashlib.sha256(self.settings.model.encode("utf-8"))
        for side in sides:
            h.update(side)
        return h.hexdigest()

    def _get_client(self) -> openai.OpenAI:
        if self.client is None:
            import openai

            self.client = openai.OpenAI(base_url=self.settings.base_url,
                                        api_key=self.settings.api_key,
                                        timeout=self.settings.timeout_s, max_retries=0)
        return self.client

    def judge(self, left_text: str, right_text: str,
              left_png: bytes | None, right_png: bytes | None) -> LLMAnswer:
        """Are the two observations the same state? Never raises.

        Errors give ``LLMAnswer(False, "llm error: ...")``, answers that are not a JSON
        object with a boolean ``same`` give ``LLMAnswer(False, "llm answer unusable: ...")``:
        on any error or doubt, different.
        """
        key = self._key(left_text, right_text, left_png, right_png)
        if key in self.cache:
            entry = self.cache[key]
            return LLMAnswer(entry["same"], entry["reason"], cached=True)
        called = False
        try:
            client = self._get_client()
            self.calls += 1
            called = True
            response = client.chat.completions.create(
                model=self.settings.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": [
                        *_observation("A", left_text, left_png),
                        *_observation("B", right_text, right_png),
                        {"type": "text", "text": "Are A and B the same state? "
                                                 'Answer {"same": true|false, "reason": "..."}.'},
                    ]},
                ],
                response_format={"type": "json_object"},
            )
            content = response.choices[0].message.content
        except Exception as exc:  # noqa: BLE001 - any failure means "different"
            return LLMAnswer(False, f"llm error: {type(exc).__name__}: {str(exc)[:200]}",
                             called=called)
        parsed = _parse(content)
        if parsed is None:
            return LLMAnswer(False, f"llm answer unusable: {str(content)[:200]!r}", called=True)
        self.cache[key] = {"same": parsed[0], "reason": parsed[1]}
        return LLMAnswer(*parsed, called=True)

    def save_cache(self, path: str | Path) -> None:
        """Write the cached answers to ``path`` as JSON."""
        Path(path).write_text(json.dumps(self.cache, indent=1, sort_keys=True), encoding="utf-8")

    def load_cache(self, path: str | Path) -> None:
        """Add the answers saved by :meth:`save_cache`; malformed entries are skipped."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        self.cache.update({k: {"same": v["same"], "reason": str(v.get("reason", ""))}
                           for k, v in data.items()
                           if isinstance(v, dict) and isinstance(v.get("same"), bool)})


def judge_for(settings: LLMSettings) -> LLMJudge | None:
    """The LLM judge a model's settings ask for: None while the tier is off (the default),
    so that no call can be made."""
    return LLMJudge(settings) if settings.enabled else None
