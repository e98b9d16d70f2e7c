"""Kafka itself: the client factories, the topics, the embedded broker and its command,
the runner library's sink, child processes."""
