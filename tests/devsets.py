"""The real recorded dev traces beside the repository (``../shared/traces``), for every
test that reads them: one place that says where they are."""
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
