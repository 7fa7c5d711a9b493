"""The demo's Kubernetes API server: store, reads, writes, watch, server-side apply, exec, discovery, faults."""
