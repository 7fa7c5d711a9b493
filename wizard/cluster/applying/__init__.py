"""Changing the cluster, all or nothing: the apply and its preview, backups and their undo, Helm and day 0.

Owns :mod:`~.apply_preview` (the bodies, dry-run and diff), :mod:`~.apply` (the writes), :mod:`~.backup` and
:mod:`~.restore` (the undo and ``gpu-wizard rollback``), :mod:`~.interrupts` (phases Ctrl-C must not cut),
:mod:`~.helm_values` and :mod:`~.helm_apply` (a Helm-owned policy's change) and :mod:`~.operator_install`
(installing the operator). A flow: may import core, the gateway, access and errors, never another flow.
"""
