"""The GPU Operator's names for what it creates: the driver DaemonSets' selector, containers and names.

A leaf module (it imports nothing): the cluster room (rollout, verification, diagnosis, upgrades, the support
bundle) and the real-cluster lane's kwok set-up read the operator's objects by these names, so each is
written once, here. They are the operator's own (``../shared/docs/gpu-operator-facts.md``).
"""

from __future__ import annotations

DRIVER_SELECTOR = "app.kubernetes.io/component=nvidia-driver"
"""The label selector of every driver pod, whichever DaemonSet (ClusterPolicy or NVIDIADriver) made it."""
DRIVER_CONTAINER = "nvidia-driver-ctr"
"""The driver container of a driver pod (where ``nvidia-smi`` runs by exec)."""
MANAGER_CONTAINER = "k8s-driver-manager"
"""The driver pod's init container that drains and evicts before the driver loads."""
VALIDATOR_SELECTOR = "app=nvidia-operator-validator"
"""The label selector of the operator's validator pods."""
TOOLKIT_SELECTOR = "app=nvidia-container-toolkit-daemonset"
"""The label selector of the container toolkit's pods (its DaemonSet's name is the same)."""
TOOLKIT_CONTAINER = "nvidia-container-toolkit-ctr"
"""The toolkit pod's own container (its init container only waits for the driver)."""
COMMON_DRIVER_DAEMONSET = "nvidia-driver-daemonset"
"""The ClusterPolicy's driver DaemonSet (precompiled: its name, then ``-<kernel>-<osTag>``)."""
