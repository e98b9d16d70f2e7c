"""A healthy worker's log holds no ERROR: aiokafka's retried coordinator lookups (a fresh
consumer group while the broker makes its offsets topic) are logged as warnings, other
errors stay errors."""
from __future__ import annotations

import logging

from aiokafka.errors import GroupAuthorizationFailedError, GroupCoordinatorNotAvailableError

from stream.kafka.clients import retried_errors_as_warnings


def test_a_retried_coordinator_lookup_is_a_warning(caplog):
    retried_errors_as_warnings()
    log = logging.getLogger("aiokafka.consumer.group_coordinator")
    with caplog.at_level(logging.WARNING, logger=log.name):
        log.error("Group Coordinator Request failed: %s", GroupCoordinatorNotAvailableError())
        log.error("Group Coordinator Request failed: %s", GroupAuthorizationFailedError())
    assert [record.levelname for record in caplog.records] == ["WARNING", "ERROR"]
