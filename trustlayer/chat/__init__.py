"""``trustlayer import chat``: logs of tool-calling agents as OpenAI chat-completions
message lists (and tau-bench's trajectories, the same lists under ``traj``) into runs of the
trace format, conversation convention (docs/TRACE_FORMAT.md)."""
