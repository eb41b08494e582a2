"""python -m tests.support.apiserver: serve the fixtures (see program.main)."""

import sys

from .program import main

sys.exit(main())
