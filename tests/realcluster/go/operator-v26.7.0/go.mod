module gpuwizard.invalid/realcluster/operator

go 1.26.0

tool github.com/NVIDIA/gpu-operator/cmd/gpu-operator

require github.com/NVIDIA/gpu-operator v1.8.3-0.20260821000907-10ee5b3638b8
