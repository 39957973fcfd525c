from dpcg.cli import main

raise SystemExit(main())
