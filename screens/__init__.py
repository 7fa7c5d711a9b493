"""The gpu-wizard Textual app: eight ordered steps from connect to a verified install.

Entry point :func:`screens.app.run` (called by ``gpu-wizard``). Layout: ``app.py`` (the App, state
ownership, navigation, palette), ``state.py`` (answers and everything learnt from the cluster),
``steps/`` (one Screen per step, see ``steps/__init__.py`` for why), ``widgets/`` and ``dialogs/``.
All cluster work goes through ``wizard.cluster.facade``; nothing here imports ``kubernetes``.
"""
