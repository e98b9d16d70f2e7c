"""Streaming validator on Kafka: embedded broker, topics and (later) the Faust worker."""
