"""The command line stays light: parsing arguments loads none of the heavy libraries."""

import argparse
import subprocess
import sys

import pytest

HEAVY = ("pydantic", "kubernetes", "textual", "ruamel", "aiohttp", "jsonschema")

PROBE = """
import sys
import wizard.cli.main
wizard.cli.main.build_parser().parse_args(["render", "--answers", "a", "--nodes", "n"])
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))))
"""


def test_parsing_loads_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *HEAVY], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", f"loaded before any work: {done.stdout.strip()}"


def test_starting_the_tui_skips_the_subcommand_parsers_but_a_stray_word_gets_the_full_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from wizard.launch import main, starts_the_tui

    assert starts_the_tui([]) and starts_the_tui(["--demo"]) and starts_the_tui(["--demo", "airgapped"])
    assert starts_the_tui(["--answers", "verify", "--context", "prod"])  # option values, not commands
    assert not starts_the_tui(["verify"]) and not starts_the_tui(["--help"])
    with pytest.raises(SystemExit) as exited:
        main(["vrify"])
    assert exited.value.code == 2
    assert "argument COMMAND: invalid choice: 'vrify' (choose from 'render'" in capsys.readouterr().err


FIRST_FRAME_PROBE = """
import sys
import wizard.launch, wizard.cli.common, screens.app, screens.styles, screens.steps.connect
screens.styles.app_css()
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))))
"""


def test_the_tui_first_frame_loads_no_engine_library_no_json_and_no_argparse() -> None:
    """What ``gpu-wizard`` without options imports before its first frame (the bare Textual app's 1.2x
    budget): Textual, not the engine's libraries, nor json or argparse (no option, no parser)."""
    libraries = (*[h for h in HEAVY if h != "textual"], "json", "yaml", "argparse")
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME_PROBE, *libraries], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "", f"loaded before the first frame: {done.stdout.strip()}"


RENDER_PROBE = """
import sys
from wizard.cli.main import COMMAND_MODULES, main
main(sys.argv[2:])
rooms = {*COMMAND_MODULES, *sys.argv[1].split()} - {"wizard.cli.examples"}
print("loaded:", *sorted(m for m in sys.modules if any(m == room or m.startswith(room + ".") for room in rooms)))
"""
NOT_FOR_RENDER = (
    "asyncio",  # the cluster commands' event loop
    "textual",
    "screens",
    "kubernetes",
    "aiohttp",
    "platformdirs",  # the state folder: found on the first request, and a render from files sends none
    "wizard.cluster",
    "wizard.cluster.errors",
    "wizard.registry",
    "wizard.demo",
    "wizard.web",
    "wizard.engine.hostdoctor",  # the doctor's engine
)
"""What ``render`` from files must not import: another command's module, another room, a library it does not use."""


def test_render_loads_no_other_command_module() -> None:
    """``render`` parses with its own declaration: serve, cluster, upgrade… (and asyncio) stay unloaded, and so do
    the rooms and libraries only other commands use (issue 38: 1.5 x the import baseline).

    (``wizard.cli.examples``, light, names the choices of ``answers init --example``, declared beside render.)"""
    example = "assets/examples/sle-micro-precompiled"
    words = ["render", "--answers", f"{example}.answers.yaml", "--nodes", f"{example}.nodes.json", "-o", "images"]
    done = subprocess.run(
        [sys.executable, "-c", RENDER_PROBE, " ".join(NOT_FOR_RENDER), *words],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip().splitlines()[-1] == "loaded:"


COMMAND_PROBE = """
import os, sys
from wizard.cli.main import COMMAND_MODULES, build_parser
for word in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        build_parser(only=word)
        print(word, *sorted(set(COMMAND_MODULES) & set(sys.modules)), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def test_each_command_loads_its_own_module_and_no_other_command_s() -> None:
    """Parsing for one command imports, of :data:`COMMAND_MODULES`, only the module declaring it (``examples``
    aside: ``answers init --example`` names its choices), directly or through what that module imports."""
    from wizard.cli.main import COMMAND_MODULES

    words = [word for declared in COMMAND_MODULES.values() for word in declared]
    done = subprocess.run([sys.executable, "-c", COMMAND_PROBE, *words], capture_output=True, text=True, check=True)
    loaded = {line.split()[0]: set(line.split()[1:]) for line in done.stdout.splitlines()}
    assert set(loaded) == set(words)
    for module, declared in COMMAND_MODULES.items():
        for word in declared:
            assert loaded[word] - {module, "wizard.cli.examples"} == set(), word


def test_each_command_parses_as_in_the_whole_parser() -> None:
    """The parser built for one command (only its module loaded) declares it exactly as the whole parser does,
    and :data:`COMMAND_MODULES` names every command some module declares."""
    from wizard.cli.common import subparsers
    from wizard.cli.main import ALL_MODULE_COMMANDS, OWN_COMMANDS, build_parser

    def options(parser: argparse.ArgumentParser) -> list[tuple[str, ...]]:
        found = [(*a.option_strings, a.dest, str(a.choices), str(a.default)) for a in parser._actions]
        for name, child in subparsers(parser).items():
            found += [(name, *option) for option in options(child)]
        return found

    whole = subparsers(build_parser())
    assert set(whole) == ALL_MODULE_COMMANDS | set(OWN_COMMANDS)
    for name, command in whole.items():
        alone = subparsers(build_parser(only=name))
        assert options(alone[name]) == options(command), name


GC_PROBE = """
import gc, os, sys
collections = []
gc.callbacks.append(lambda phase, info: phase == "start" and collections.append(info["generation"]))
sys.stdout = open(os.devnull, "w")
from wizard.launch import main
main(sys.argv[1:])
print(len(collections), gc.isenabled(), file=sys.stderr)
"""


def test_render_loads_the_engine_with_the_cyclic_collector_paused() -> None:
    """The collector would only rescan the classes, models and schemas being built while the engine loads: a render
    ran ~69 collections (6 of them of generation 1), 15–20 CPU-ms on the loaded 2-core machine; with the collector
    paused while the engine loads and the answers are read, ~13. It runs again afterwards."""
    example = "assets/examples/sle-micro-precompiled"
    words = ["render", "--answers", f"{example}.answers.yaml", "--nodes", f"{example}.nodes.json"]
    done = subprocess.run([sys.executable, "-c", GC_PROBE, *words], capture_output=True, text=True, check=True)
    count, enabled = done.stderr.strip().splitlines()[-1].split()
    assert int(count) <= 30 and enabled == "True", done.stderr


FREEZE_PROBE = """
import atexit, gc, os, sys
atexit.register(lambda: print("frozen", gc.get_freeze_count(), file=sys.stderr))
sys.stdout = open(os.devnull, "w")
from wizard.launch import main
if sys.argv[1] == "argv":
    main(sys.argv[2:])
else:
    sys.argv[1:] = sys.argv[2:]
    main()
"""


def test_the_render_process_freezes_what_it_built_before_it_exits() -> None:
    """The exit's collections skip what a render built (gc.freeze); a caller passing argv (a test) is left alone."""
    example = "assets/examples/sle-micro-precompiled"
    words = ["render", "--answers", f"{example}.answers.yaml", "--nodes", f"{example}.nodes.json"]
    frozen = {}
    for how in ("process", "argv"):
        done = subprocess.run([sys.executable, "-c", FREEZE_PROBE, how, *words], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        frozen[how] = int(done.stderr.strip().splitlines()[-1].split()[-1])
    assert frozen["process"] > 10_000 and frozen["argv"] == 0, frozen
