"""Judging a run against a model: the incremental matcher, the failure's cause and the
phases a run went through, and the view of a judged run that reports draw."""
