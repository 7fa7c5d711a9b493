"""gpu-wizard engine."""
