"""Scoring judgement: verdicts against labels, the baselines beside trustlayer, a
model's check against its own training runs, and the evaluation over many tasks."""
