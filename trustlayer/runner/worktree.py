"""A coding agent's state: its working tree as ``{path: sha256}`` (the format's code
snapshot) and the output its last tool printed."""
from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# what is not the agent's work: version control, caches, environments
DEFAULT_IGNORE = (".git", "__pycache__", "*.pyc", ".venv", "node_modules", ".pytest_cache",
                  ".mypy_cache", ".ruff_cache", "*.egg-info")


def _ignored(name: str, relative: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(relative, p) for p in patterns)


def tree_hashes(root: str | Path, ignore: Iterable[str] = DEFAULT_IGNORE) -> dict[str, str]:
    """``{relative path: sha256 of its bytes}`` of the files under `root`, sorted; a name
    or a relative path matching a glob of `ignore` is left out (a directory with all it
    holds). A symbolic link is hashed as its target's text, never followed out of `root`.

    >>> import tempfile; root = Path(tempfile.mkdtemp())
    >>> _ = (root / "a.py").write_text("x = 1\\n"); (root / ".git").mkdir()
    >>> tree_hashes(root)
    {'a.py': '9e26bf369911c45c243c684147b23fc9e1dcfcf257d299a1c632016a6fcd33f4'}
    """
    patterns, root = tuple(ignore), Path(root)
    hashes: dict[str, str] = {}
    for folder, subfolders, names in os.walk(root):
        base = Path(folder).relative_to(root)
        subfolders[:] = sorted(d for d in subfolders
                               if not _ignored(d, (base / d).as_posix(), patterns))
        for name in names:
            relative = (base / name).as_posix()
            if _ignored(name, relative, patterns):
                continue
            path = Path(folder) / name
            data = os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            hashes[relative] = hashlib.sha256(data).hexdigest()
    return dict(sorted(hashes.items()))


def state_from_worktree(path: str | Path, output: str | None = None,
                        ignore: Iterable[str] = DEFAULT_IGNORE) -> dict[str, Any]:
    """The keywords of ``run.state(...)`` for a working tree: its files and, when given,
    the `output` of the tool the agent just ran (its text)."""
    state: dict[str, Any] = {"files": tree_hashes(path, ignore)}
    if output is not None:
        state["text"] = output
    return state
