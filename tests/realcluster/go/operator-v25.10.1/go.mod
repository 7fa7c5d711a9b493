module gpuwizard.invalid/realcluster/operator

go 1.26.0

tool github.com/NVIDIA/gpu-operator/cmd/gpu-operator

require github.com/NVIDIA/gpu-operator v1.8.3-0.20251203194844-846018752b8a
