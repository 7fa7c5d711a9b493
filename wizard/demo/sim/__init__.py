"""The demo's simulators: the GPU Operator's controllers, the kubelet, node commands and nvidia-smi.

They react to what is written into the API server's store, as the real operator and kubelet would.
"""
