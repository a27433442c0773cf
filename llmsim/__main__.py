from llmsim.cli import main

raise SystemExit(main())
