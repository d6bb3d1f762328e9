"""Undoable changes to the rules list: one QUndoCommand per add, duplicate, edit, delete or move.

Every change of the routes panel goes through its QUndoStack, so the indices a command holds are
right whenever it is undone or redone. `select(row)` shows the affected rule afterwards.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QUndoCommand

from laya_desktop.gui.rules_list import RulesList, undo_move

Select = Callable[[int], None]


def command_text(verb: str, name: str) -> str:
    """The undo stack's text for a change, in the window's language."""
    templates = {
        "add": QCoreApplication.translate("RuleCommands", "add rule '{name}'"),
        "duplicate": QCoreApplication.translate("RuleCommands", "duplicate rule '{name}'"),
        "delete": QCoreApplication.translate("RuleCommands", "delete rule '{name}'"),
        "edit": QCoreApplication.translate("RuleCommands", "edit rule '{name}'"),
        "enable": QCoreApplication.translate("RuleCommands", "enable rule '{name}'"),
        "disable": QCoreApplication.translate("RuleCommands", "disable rule '{name}'"),
        "move": QCoreApplication.translate("RuleCommands", "move rule '{name}'"),
    }
    return templates.get(verb, verb + " rule '{name}'").format(name=name)


class InsertCommand(QUndoCommand):
    """Add or duplicate: `rule` goes in at `index`."""

    def __init__(self, rules: RulesList, index: int, rule: dict, select: Select, verb: str) -> None:
        super().__init__(command_text(verb, rule.get("name", "")))
        self.rules, self.index, self.rule, self.select = rules, index, rule, select

    def redo(self) -> None:
        self.rules.insert(self.index, self.rule)
        self.select(self.index)

    def undo(self) -> None:
        del self.rules[self.index]
        self.select(min(self.index, len(self.rules) - 1))


class DeleteCommand(QUndoCommand):
    def __init__(self, rules: RulesList, index: int, select: Select) -> None:
        super().__init__(command_text("delete", rules[index].get("name", "")))
        self.rules, self.index, self.rule, self.select = rules, index, rules[index], select

    def redo(self) -> None:
        del self.rules[self.index]
        self.select(min(self.index, len(self.rules) - 1))

    def undo(self) -> None:
        self.rules.insert(self.index, self.rule)
        self.select(self.index)


class EditCommand(QUndoCommand):
    """The rule at `index` replaced: a field edited in the form, or enabled/disabled."""

    def __init__(self, rules: RulesList, index: int, after: dict, select: Select,
                 what: str = "edit") -> None:
        super().__init__(command_text(what, after.get("name", "")))
        self.rules, self.index, self.select = rules, index, select
        self.before, self.after = rules[index], after

    def redo(self) -> None:
        self.rules[self.index] = self.after
        self.select(self.index)

    def undo(self) -> None:
        self.rules[self.index] = self.before
        self.select(self.index)


class MoveCommand(QUndoCommand):
    """Records a move that already happened (drag and drop or moveRows) so it can be undone.
    `replay(src, dest)` moves without recording the move again."""

    def __init__(self, replay: Callable[[int, int], None], src: int, landed: int, name: str) -> None:
        super().__init__(command_text("move", name))
        self.replay, self.src, self.landed = replay, src, landed
        self._first = True

    def redo(self) -> None:
        if self._first:
            self._first = False
            return
        self.replay(self.src, self.landed + 1 if self.landed > self.src else self.landed)

    def undo(self) -> None:
        self.replay(*undo_move(self.src, self.landed))
