"""``python -m ctshard ...``: the ``ctshard`` command line (see ``ctshard._cli``)."""

from ._cli import main

raise SystemExit(main())
