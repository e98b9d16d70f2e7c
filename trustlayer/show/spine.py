"""A conversation model's spine as text lines for ``trustlayer show``: the changes every
successful run made, every change any of them made, what they all told the person."""
from __future__ import annotations

from trustlayer.model_effects import EffectSpine, Required


def spine_lines(spine: EffectSpine) -> list[str]:
    """The lines ``show`` prints for `spine` (no states: a conversation's turns are no
    milestones)."""
    lines = ["judged by its changes (a conversation):",
             "required changes (every successful run made them):" if spine.required
             else "required changes: none (the successful runs made none in common)"]
    lines += [f"  {number}. {required.name}  ({_args(required) or 'any arguments'})"
              for number, required in enumerate(spine.required, 1)]
    lines.append("known changes (a change with other values fails):" if spine.known
                 else "known changes: none (any change fails)")
    for change in (Required(tool, view) for tool, views in spine.known.items() for view in views):
        lines.append(f"  - {change.name}  ({_args(change) or 'own words only'})")
    if spine.told:
        lines.append("told the person (every successful run worked it out and said it): "
                     + ", ".join(f"'{fact}'" for fact in spine.told))
    return lines


def _args(required: Required) -> str:
    return ", ".join(f"{key} {value.strip(chr(34))}" for key, value in required.args)
