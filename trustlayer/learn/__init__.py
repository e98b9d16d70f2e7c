"""Learning a model from successful runs: aligning their states, merging them into one
graph, the dominators that make milestones, what is evidence of the goal, and names."""
