"""The Faust worker: the app wiring, its runtime, checkpoints, tables, the watchdog over
the consumer and the supervisor that restarts it."""
