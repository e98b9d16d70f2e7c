"""The menu a state shows open, named by the click that opened it: what a person calls
that screen (``File menu``), where the menu's tree has no name of its own.

A runner writes a click's target as a WAI-ARIA role and the accessible name
(``menu File``, ``menuitem New``, or the role in words: ``menu item New``).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

#: a click on a menu or one of its items, as an action's signature (``click:menu File:``)
_MENU_CLICK = re.compile(r"^click:(?:menu ?item|menubar|menu) (.+?):")
#: the tree line of an open menu (``- menu`` or ``- menu "Edit"``)
_OPEN_MENU = re.compile(r'^A\|- menu(?: "|$)')


def opened_menu(templates: Sequence[str], signatures: Sequence[str]) -> str:
    """``<name> menu`` when the state's tree (`templates`) shows a menu and most of the
    actions that led to its members (`signatures`) clicked the same menu or menu item;
    else "".

    >>> opened_menu(["A|- menu", "A|- menuitem \\" New \\""], ["click:menu File:", "wait::"])
    'File menu'
    >>> opened_menu(["A|- menuitem \\" New \\""], ["click:menu File:"])
    ''
    """
    if not any(_OPEN_MENU.match(template) for template in templates):
        return ""
    clicked = Counter(match.group(1).strip() for sig in signatures
                      if (match := _MENU_CLICK.match(sig)))
    if not clicked:
        return ""
    name, count = clicked.most_common(1)[0]
    return f"{name} menu" if 2 * count >= len(signatures) else ""
