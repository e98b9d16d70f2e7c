"""Where test data lives: the repository (its ``examples/``) and the real recorded dev
traces beside it (``../shared/traces``), in one place for every test module."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared" / "traces"
