// NOT BUILDABLE HERE: the Go module proxy answers "403 This module version is not available" for
// github.com/NVIDIA/gpu-operator at v1.8.3-0.20260821000907-10ee5b3638b8 (the v26.7.0 tag's commit), in
// both pseudo-version forms (v1.8.3-0. and v0.0.0-), and for the 44 first-parent commits between
// v26.3.3 and the repository's newest (2026-08-21) probed on 2026-12-02. Without a go.sum this folder is
// skipped by tests/realcluster/build.py; once the proxy serves the module, run `go mod tidy` here.
module gpuwizard.invalid/realcluster/operator

go 1.26.0

tool github.com/NVIDIA/gpu-operator/cmd/gpu-operator

require github.com/NVIDIA/gpu-operator v1.8.3-0.20260821000907-10ee5b3638b8
