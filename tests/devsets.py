"""Where test data lives: the repository (its ``examples/``) and the real recorded dev
traces beside it (``../shared/traces``), in one place for every test module."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
SHARED = REPO.parent / "shared" / "traces"
#: The tasks of the dev traces (a folder with train/ and test/ each), under SHARED.
DEV_TASKS = ("jupyter-dev", "coding-dev", "coding-dev2/slugify-cli-flag",
             "coding-dev2/slugify-fix-regex-bug", "datasette-dev/ds-countries-filter-count",
             "datasette-dev/ds-json-export-row", "django-dev/dj-rename-category",
             "django-dev/dj-search-open")
