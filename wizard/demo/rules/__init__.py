"""The demo's own reading of the GPU Operator's rules and of Node objects, imported by the simulators and the scenarios.

Written from the operator's source, never from ``wizard.engine``: the peer-case tests run the
operator's unit-test cases against both, so a naming bug in one cannot hide in the other.
"""
