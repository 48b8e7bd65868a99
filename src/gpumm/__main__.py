from gpumm.cli import main

raise SystemExit(main())
