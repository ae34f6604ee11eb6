from verlstudy.course.cli import main

raise SystemExit(main())
