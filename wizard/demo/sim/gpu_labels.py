"""The GPU state labels the simulated operator keeps on every node (``addGPUStateLabels``)."""

from __future__ import annotations

from wizard.demo.rules.operator_rules import LABEL_GPU_PRESENT, NVIDIA_PCI_LABELS

DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
DEPLOY_OPERANDS = (
    "driver",
    "gpu-feature-discovery",
    "container-toolkit",
    "device-plugin",
    "dcgm",
    "dcgm-exporter",
    "node-status-exporter",
    "operator-validator",
)


def is_gpu_node(labels: dict[str, str]) -> bool:
    """NFD saw an NVIDIA PCI device (what makes the operator set ``nvidia.com/gpu.present=true``)."""
    return any(labels.get(key) == "true" for key in NVIDIA_PCI_LABELS)


def gpu_state_labels(labels: dict[str, str]) -> dict[str, str]:
    """``addGPUStateLabels``/``removeGPUStateLabels``: the node's labels after the operator's pass."""
    new = dict(labels)
    if is_gpu_node(labels):
        new[LABEL_GPU_PRESENT] = "true"
        if labels.get(f"{DEPLOY_PREFIX}operands") == "false":
            for operand in DEPLOY_OPERANDS:
                new.pop(DEPLOY_PREFIX + operand, None)
        else:
            for operand in DEPLOY_OPERANDS:
                if not new.get(DEPLOY_PREFIX + operand):  # a non-empty value (pre-installed) is kept
                    new[DEPLOY_PREFIX + operand] = "true"
    elif labels.get(LABEL_GPU_PRESENT) == "true":
        new[LABEL_GPU_PRESENT] = "false"
        for operand in DEPLOY_OPERANDS:
            new.pop(DEPLOY_PREFIX + operand, None)
    return new
