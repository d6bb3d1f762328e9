"""Which visible widgets of a window are squeezed below their minimum size hint.

Skipped: a widget inside a scroll area's viewport (it scrolls instead of squeezing), one that is
hidden or of zero size (a collapsed or not yet laid out part), the parts a composite widget lays
out itself (a spin box's or combo box's line edit, a view's header, whose height is its sizeHint
and whose minimumSizeHint is a generic 68x68)."""
from __future__ import annotations

from PySide6.QtWidgets import QAbstractScrollArea, QAbstractSpinBox, QComboBox, QHeaderView, QWidget

COMPOSITES = (QAbstractSpinBox, QComboBox)


def _in_scroll_viewport(widget: QWidget, root: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None and parent is not root:
        grand = parent.parentWidget()
        if isinstance(grand, QAbstractScrollArea) and grand.viewport() is parent:
            return True
        parent = grand
    return False


def squeezed(root: QWidget, slack: int = 1) -> list[str]:
    found = []
    for widget in [root, *root.findChildren(QWidget)]:
        if not widget.isVisibleTo(root) or widget.width() == 0 or widget.height() == 0:
            continue
        if widget.isWindow() and widget is not root:
            continue
        if _in_scroll_viewport(widget, root) or isinstance(widget, QHeaderView) \
                or isinstance(widget.parentWidget(), COMPOSITES):
            continue
        hint = widget.minimumSizeHint().expandedTo(widget.minimumSize())
        if not hint.isValid():
            continue
        # a widget's own minimum may be below its hint on purpose (setMinimumWidth); honour it
        low_w = widget.minimumWidth() or hint.width()
        low_h = widget.minimumHeight() or hint.height()
        if widget.width() + slack < min(hint.width(), low_w) or \
                widget.height() + slack < min(hint.height(), low_h):
            found.append(f"{_path(widget, root)}: {widget.width()}x{widget.height()} < "
                         f"{hint.width()}x{hint.height()}")
    return found


def _path(widget: QWidget, root: QWidget) -> str:
    parts = []
    while widget is not None and widget is not root:
        name = widget.objectName() or type(widget).__name__
        text = getattr(widget, "text", None)
        if callable(text) and isinstance(text(), str) and text():
            name += f"({text()[:20]!r})"
        parts.append(name)
        widget = widget.parentWidget()
    return "/".join(reversed(parts))
