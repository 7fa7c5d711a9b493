"""The engine's pure rules: answers, plan, node facts, image naming, rendering, mirror plan, advice.

No I/O beyond reading bundled data, and no aiohttp, kubernetes or textual: every other room builds on it.
"""
