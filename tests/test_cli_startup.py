"""The command line stays light: parsing arguments loads none of the heavy libraries."""

import subprocess
import sys

HEAVY = ("pydantic", "kubernetes", "textual", "ruamel", "aiohttp", "jsonschema")

PROBE = """
import sys
import wizard.cli
wizard.cli.build_parser().parse_args(["render", "--answers", "a", "--nodes", "n"])
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))))
"""


def test_parsing_loads_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *HEAVY], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"loaded before any work: {done.stdout.strip()}"
