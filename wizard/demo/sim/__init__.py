"""The demo's simulators: the GPU Operator's controllers, the kubelet, node commands and nvidia-smi."""
