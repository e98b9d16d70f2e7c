"""Where test data lives: the repository (its ``examples/`` and the slice of real runs in
``tests/data``) and the real recorded dev traces beside it (``../shared/traces``), in one
place for every test module.

A test that reads SHARED carries the ``devtraces`` mark (``DEVTRACES``; a parameter that
reads it, ``dev(*values)``): where the folder is absent it is skipped, unless
``--require-devtraces`` is given (CI), which makes the absence an error (``conftest.py``)."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
#: Real runs copied from SHARED, shipped with the repository (tests/data/README.md).
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared" / "traces"
#: The tasks of the dev traces (a folder with train/ and test/ each), under SHARED.
DEV_TASKS = ("jupyter-dev", "coding-dev", "coding-dev2/slugify-cli-flag",
             "coding-dev2/slugify-fix-regex-bug", "datasette-dev/ds-countries-filter-count",
             "datasette-dev/ds-json-export-row", "django-dev/dj-rename-category",
             "django-dev/dj-search-open")
#: The tasks of the shipped slice under DATA (code, network with screens, a conversation),
#: each with the folder under SHARED its runs were copied from.
SLICE_TASKS = {"slugify-fix-regex-bug": "coding-dev2/slugify-fix-regex-bug",
               "dj-search-open": "django-dev/dj-search-open", "tau-airline-T40": "tau-airline-dev"}
DEVTRACES = pytest.mark.devtraces


def dev(*values: object, id: str | None = None) -> object:
    """`values` as one test parameter set that reads the dev traces (``devtraces``)."""
    return pytest.param(*values, marks=DEVTRACES, id=id)
