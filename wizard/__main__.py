"""``python -m wizard``: the same as the ``gpu-wizard`` command."""

import sys

from wizard.launch import main

sys.exit(main())
