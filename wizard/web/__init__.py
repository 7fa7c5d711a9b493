"""Classroom mode: the wizard served to browsers, one isolated demo cluster per student (``gpu-wizard serve``).

``sessions`` starts one ``python -m wizard --demo SCENARIO --web`` process per browser, in its own
process group; ``pool`` holds the places and keeps spares started ahead; ``seats`` binds a session
to its browser (a reload or a closed tab finds it again within the grace period) and counts
sessions per client; ``relay`` bounds and relays the browser's input; ``environment`` builds each
process's clean environment and its own folders; ``protocol`` frames what goes between that process
and the server (Textual's web driver protocol); ``server`` is the aiohttp front: the token and seat
cookies, the Origin check, the trainer's status and the page (``pages``, with ``assets/web/classroom.js``).
Nothing here imports Textual or ``screens``: the app runs only in the session processes.
"""
