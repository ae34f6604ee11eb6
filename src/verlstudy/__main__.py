from verlstudy.cli import main

raise SystemExit(main())
