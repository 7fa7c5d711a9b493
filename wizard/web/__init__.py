"""Classroom mode: the wizard served to browsers, one isolated demo cluster per student (``gpu-wizard serve``).

``sessions`` starts one ``python -m wizard --demo SCENARIO --web`` process per browser tab, in its own
process group (and keeps spares started ahead); ``environment`` builds its clean environment and its
own folders; ``protocol`` frames what goes between
that process and the server (Textual's web driver protocol); ``server`` is the aiohttp front: the
token, the cookie, the Origin check, the session cap and the page. Nothing here imports Textual or
``screens``: the app runs only in the session processes.
"""
