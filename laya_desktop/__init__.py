"""Laya Desktop: a self-hosted model gateway with a desktop control panel."""

__version__ = "0.1.0"
