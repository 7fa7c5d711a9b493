"""The built-in demo cluster: an HTTPS Kubernetes API, simulated operator and kubelet; imports no engine rule."""
