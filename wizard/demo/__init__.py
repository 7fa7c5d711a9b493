"""The built-in demo cluster: a real HTTPS Kubernetes API (``api``), a simulated operator and kubelet (``sim``) following the operator's rules (``rules``), and the scenarios.

It imports no engine rule, so that it can disagree with the engine; ``serve`` starts it.
"""
