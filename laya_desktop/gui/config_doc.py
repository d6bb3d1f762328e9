"""Moved: the applied config is kept by EngineState (gui/engine_state.py), with the rest of the
engine's state. This name stays while code that imports it moves over."""
from laya_desktop.gui.engine_state import EngineState as ConfigDocument

__all__ = ["ConfigDocument"]
