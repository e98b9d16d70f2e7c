"""Refused records and their dead letters: what the stream does not read or trust, and why.

:class:`Rejected` is a refused record (an event :mod:`stream.judging.events` cannot read, a
model record :mod:`stream.models.signing` does not trust): its DLQ reason and a message
naming the record. :func:`dead_letter` is what the worker publishes to
``trustlayer.events.dlq`` for it.

The reasons (the ``reason`` label of ``trustlayer_dlq_records_total``):

=======================  =========================================================================
malformed_json           not JSON, not UTF-8, or a number of over 4,300 digits
too_deep                 JSON nested deeper than the trace format allows
wrong_schema             JSON, but not a trace event (a field missing, of the wrong type, ...)
image_too_large          a screenshot over the pixel limit (or a decompression bomb)
bad_image                a screenshot not a PNG, JPEG or WebP image, not a regular file, or
                         undecodable
path_outside_dir         a screenshot path outside the worker's ``--images`` directory
image_not_found          a screenshot path that names no file
wrong_key                the record's key is not exactly the event's ``run_id`` (in valid UTF-8)
no_model                 no model for the event's task
wrong_task               the event's task is not the task its run started with
after_end                an event of a run whose end was already judged (its verdict is final)
conflicting_duplicate    a ``(run_id, seq)`` seen before, with other content
run_id_reused            a ``seq`` 0 seen before with other content: a second run under a used id
unsigned_model           a ``trustlayer.models`` record without a signature
bad_signature            a ``trustlayer.models`` record signed with another key
bad_model                a ``trustlayer.models`` record that is not a valid model
internal_error           the worker failed on the record (a bug: it is logged with its traceback)
=======================  =========================================================================
"""
from __future__ import annotations

import base64
from typing import Any

from trustlayer.errors import TRACE_CODES, cut

#: The stream's own reasons; an event the core refuses goes by its TraceError's code.
STREAM_REASONS = ("wrong_key", "no_model", "wrong_task", "after_end", "conflicting_duplicate",
                  "run_id_reused", "unsigned_model", "bad_signature", "bad_model",
                  "internal_error")
#: Every DLQ reason.
REASONS = (*TRACE_CODES, *STREAM_REASONS)
#: Bytes of a bad record's value kept in its DLQ record (the rest is cut, with a flag): the
#: DLQ record, value escaped as JSON or base64, stays under the topic's 10 MB limit.
DLQ_VALUE_MAX = 1024 * 1024


class Rejected(Exception):
    """A record that goes to the dead-letter topic: why (one of :data:`REASONS`) and what."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason, self.message = reason, message


def dead_letter(key: bytes | None, value: bytes | None, source: Any, reason: str,
                error: str) -> dict[str, Any]:
    """The DLQ record of a refused record from `source` (topic, partition, offset,
    timestamp): the reason, the message, and the value (text, else base64; cut at
    :data:`DLQ_VALUE_MAX` bytes with ``value_truncated``)."""
    record: dict[str, Any] = {"reason": reason, "error": cut(error, 2000),
                              "topic": source.topic, "partition": source.partition,
                              "offset": source.offset, "timestamp": source.timestamp,
                              "key": None if key is None else cut(key.decode("utf-8", "replace"),
                                                                   1000)}
    value = value or b""
    if len(value) > DLQ_VALUE_MAX:
        record["value_bytes"], value = len(value), value[:DLQ_VALUE_MAX]
        record["value_truncated"] = True
    try:
        record["value"] = value.decode("utf-8")
    except UnicodeDecodeError:
        record["value_base64"] = base64.b64encode(value).decode("ascii")
    return record
