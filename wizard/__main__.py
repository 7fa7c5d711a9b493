"""``python -m wizard``: the same as the ``gpu-wizard`` command."""

import sys

from wizard.cli.main import main

sys.exit(main())
