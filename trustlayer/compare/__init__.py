"""Comparing an observed state with a model state: the tiered equivalence check (exact
bytes, learned templates, perceptual hashes and SSIM, the optional LLM) and the index
that finds the candidates."""
