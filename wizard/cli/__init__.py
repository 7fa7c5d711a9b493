"""The ``gpu-wizard`` command line, one module per command group, on top of the facade and the engine.

A peer of ``screens`` (the TUI): neither imports the other; :mod:`wizard.launch` picks one.
"""
