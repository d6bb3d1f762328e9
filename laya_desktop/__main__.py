from laya_desktop.cli import main

raise SystemExit(main())
