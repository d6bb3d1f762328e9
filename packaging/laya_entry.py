"""The frozen app's entry point: one executable for `gui` (default), `serve` and `_runner`."""
from laya_desktop.cli import main

raise SystemExit(main())
