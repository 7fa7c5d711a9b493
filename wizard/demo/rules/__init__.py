"""The demo's own reading of the GPU Operator's rules and of Node objects, written apart from ``wizard.engine``."""
