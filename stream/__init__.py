"""Streaming validator on Kafka, in layers (lowest first): :mod:`stream.deadletter`
(refused records), ``models`` (versions, signing, refinement), ``judging`` (events to
verdicts, no Kafka), ``kafka`` (clients, topics, the embedded broker), ``worker`` (the Faust
wiring) and ``commands`` (the ``trustlayer`` subcommands); ``tests/test_architecture.py``
keeps them so."""
