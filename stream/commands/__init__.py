"""The streaming ``trustlayer`` commands: worker, replay, verdicts, models, demo and
export-verdicts."""
