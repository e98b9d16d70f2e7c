"""A task's model versions: the registry, signed model records, attested outcomes and
online refinement. No Kafka."""
