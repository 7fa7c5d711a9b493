"""Hostile and careless input to the answers loader, the field grammars, file writes and start-up.

Run by ``tests/test_hostile_catalog.py`` as real CLI processes (see ``tests/helpers/hostile/case.py``); each
ends with the exit code given, names the field and line where there is one, within 2 s and 200 MB.
Most render an answers file (``{dir}/answers.yaml``) against the example NodeList.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.hostile.case import HostileCase

EXAMPLES = Path(__file__).resolve().parents[3] / "assets" / "examples"
GOOD_ANSWERS = (EXAMPLES / "sle-micro-precompiled.answers.yaml").read_text(encoding="utf-8")
GOOD_NODES = (EXAMPLES / "sle-micro-precompiled.nodes.json").read_text(encoding="utf-8")
RENDER = ("render", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/nodes.json")
PRE = "version: 1\nmode: preinstalled\n"
"""A valid preinstalled head: what follows it is the hostile part."""


def driver(fields: str, mode: str = "precompiled") -> str:
    """An answers file whose ``driver`` mapping holds ``fields`` (flow style, without the braces)."""
    return f"version: 1\nmode: {mode}\ndriver: {{{fields}}}\n"


def bad_answers(name: str, text: str | bytes, *expected: str) -> HostileCase:
    """``render`` with this answers file exits 2, its stderr containing every ``expected`` text."""
    return HostileCase(
        name, RENDER, 2, files={"answers.yaml": text, "nodes.json": GOOD_NODES}, stderr_has=("error: ", *expected)
    )


def bad_path(name: str, field: str, value: str, *expected: str) -> HostileCase:
    """A host path (``toolkit.installDir`` or ``hostPaths.driverInstallDir``) that must be refused."""
    section, key = field.split(".")
    quoted = (
        value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\0", "\\0").replace("\x1b", "\\e")
    )
    return bad_answers(name, f'{PRE}{section}: {{{key}: "{quoted}"}}\n', f"answers.yaml:3: {field}: ", *expected)


def bad_nodes(name: str, text: str, expected: str) -> HostileCase:
    files: dict[str, str | bytes] = {"answers.yaml": GOOD_ANSWERS, "nodes.json": text}
    return HostileCase(name, RENDER, 2, files=files, stderr_has=("nodes.json", expected))


LAUGHS = 'version: 1\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)

# -- the original bad-input table (was tests/test_bad_input.py BAD_ANSWERS) -------------------------------
CLASSIC: list[HostileCase] = [
    bad_answers("malformed-yaml", "version: 1\nmode: [\n", "answers.yaml:3: malformed YAML"),
    bad_answers("tab-indent", "\tversion: 1\n", "answers.yaml:1: malformed YAML"),
    bad_answers("not-mapping", "- a\n- b\n", "must be a mapping"),
    bad_answers("empty-file", "", "version: missing"),
    bad_answers("wrong-format-version", "version: 7\n", "answers.yaml:1: version:"),
    bad_answers(
        "unknown-top-key", "version: 1\nfoo: 1\n", "answers.yaml:2: foo: unknown key; valid keys here: version"
    ),
    bad_answers("unknown-nested-key", "version: 1\ntoolkit:\n  dir: /x\n", "answers.yaml:3: toolkit.dir: unknown key"),
    bad_answers("bad-mode", "version: 1\nmode: compiled\n", "answers.yaml:2: mode: Input should be 'precompiled'"),
    bad_answers("mode-number", "version: 1\nmode: 3\n", "answers.yaml:2: mode:"),
    bad_answers("version-float", "version: 1\ndriver: {version: 580.1, repository: r.io/a}\n", "quote it"),
    bad_answers(
        "version-os-suffix",
        "version: 1\nmode: upstream\ndriver: {version: 565.57.01-ubuntu22.04, repository: r.io/a}\n",
        "#1200",
    ),
    bad_answers(
        "version-kernel-suffix",
        "version: 1\ndriver: {version: 580.126.09.1-5.14.21-default, repository: r.io/a}\n",
        "suffix",
    ),
    bad_answers(
        "version-garbage",
        driver("version: latest, repository: r.io/a"),
        "driver.version: 'latest' is not a driver version",
    ),
    bad_answers(
        "digest-precompiled",
        driver(f"version: 'sha256:{'0' * 64}', repository: r.io/a"),
        "not supported in precompiled",
    ),
    bad_answers(
        "digest-short",
        "version: 1\nmode: upstream\ndriver: {version: 'sha256:abc', repository: r.io/a}\n",
        "64 lower-case hex",
    ),
    bad_answers(
        "missing-version", "version: 1\ndriver: {repository: r.io/a}\n", "driver.version: required in precompiled"
    ),
    bad_answers("missing-repository", "version: 1\ndriver: {version: '580'}\n", "driver.repository: required"),
    bad_answers("repo-scheme", "version: 1\ndriver: {version: '580', repository: 'https://r.io/a'}\n", "URL scheme"),
    bad_answers(
        "repo-uppercase", "version: 1\ndriver: {version: '580', repository: r.io/Mlops}\n", "not a registry/repository"
    ),
    bad_answers(
        "repo-with-tag", "version: 1\ndriver: {version: '580', repository: 'r.io/a:1'}\n", "not a registry/repository"
    ),
    bad_answers("source-space", driver("version: '580', repository: r.io/a, source: 'r.io/my repo'"), "driver.source"),
    bad_answers("image-with-tag", driver("version: '580', repository: r.io/a, image: 'drv:1'"), "carries a tag"),
    bad_answers("image-uppercase", driver("version: '580', repository: r.io/a, image: Driver"), "not an image name"),
    bad_answers(
        "relative-installdir",
        f"{PRE}toolkit: {{installDir: opt/nvidia}}\n",
        "toolkit.installDir: 'opt/nvidia' is not an absolute",
    ),
    bad_answers(
        "unnormalised-dir", f"{PRE}hostPaths: {{driverInstallDir: /run//nvidia/}}\n", "write it as '/run/nvidia'"
    ),
    bad_answers("dotdot-dir", f"{PRE}hostPaths: {{driverInstallDir: /run/../etc}}\n", "not normalised"),
    bad_answers("installdir-number", f"{PRE}toolkit: {{installDir: 5}}\n", "toolkit.installDir"),
    bad_answers("unknown-release", f"{PRE}operator: {{version: v24.9.0}}\n", "valid: v25.10.1, v26.3.3, v26.7.0"),
    bad_answers("release-garbage", f"{PRE}operator: {{version: latest}}\n", "operator.version"),
    bad_answers("bad-namespace", f"{PRE}operator: {{namespace: GPU}}\n", "operator.namespace"),
    bad_answers(
        "repoconfig-precompiled",
        driver("version: '580', repository: r.io/a, repoConfig: {configMapName: repos}"),
        "only used in upstream",
    ),
    bad_answers(
        "repoconfig-bad-name",
        "version: 1\nmode: upstream\ndriver: {version: '580', repository: r.io/a, repoConfig: {configMapName: Repo_1}}\n",
        "ConfigMap name",
    ),
    bad_answers("pull-secret-bad", f"{PRE}driver: {{imagePullSecrets: ['a b']}}\n", "Secret name"),
    bad_answers("pull-secrets-not-list", f"{PRE}driver: {{imagePullSecrets: regcred}}\n", "driver.imagePullSecrets"),
    bad_answers("crd-flag-string", f"{PRE}driver: {{useNvidiaDriverCRD: maybe}}\n", "driver.useNvidiaDriverCRD"),
    bad_answers("driver-is-list", "version: 1\ndriver: [a]\n", "driver:"),
]

# -- a loader that cannot be made to hang, crash or eat memory -------------------------------------------
BOUNDS: list[HostileCase] = [
    bad_answers("billion-laughs", LAUGHS, "answers.yaml:2: a: anchors and aliases", "write each value out"),
    bad_answers("anchor-without-alias", f"{PRE}operator: &o {{namespace: gpu}}\n", "answers.yaml:3: operator: anchors"),
    bad_answers("nesting-5000-deep", "version: 1\nx:\n" + "[\n" * 5000 + "]\n" * 5000, "10002 lines", "at most 500"),
    bad_answers("nesting-17-deep-one-line", "version: 1\nx: " + "[" * 17 + "]" * 17 + "\n", "nested deeper than 16"),
    bad_answers("integer-5000-digits", "version: " + "9" * 5000 + "\n", "answers.yaml:1: line 1 has 5009 characters"),
    bad_answers("integer-100-digits", driver(f"version: {'7' * 100}"), "driver.version: a number of 100"),
    bad_answers("float-400-digits", f"{PRE}toolkit: {{installDir: {'1' * 200}.{'1' * 200}}}\n", "a number of 401"),
    bad_answers("hex-64-digits", "version: 0x" + "f" * 64 + "\n", "version: a number of 66 characters"),
    bad_answers(
        "comments-40k-lines", PRE + "# a comment line\n" * 40_000, "40002 lines; an answers file needs far fewer"
    ),
    bad_answers("comment-line-5mb", PRE + "#" + "x" * 5_000_000 + "\n", "bytes; an answers file may hold at most"),
    bad_answers(
        "file-5mb", PRE + "# c\n" * 1_310_720, "more than 1,048,576 bytes; an answers file may hold at most 1,048,576"
    ),
    bad_answers("file-1mib-plus-1", PRE + "#" * ((1 << 20) - len(PRE) + 1), "more than 1,048,576 bytes"),
    bad_answers("comments-over-64kib", PRE + ("#" + "c" * 999 + "\n") * 80, "the comments exceed 64 KiB"),
    bad_answers(
        "line-over-1024", PRE + "operator: {namespace: " + "a" * 2000 + "}\n", "answers.yaml:3: line 3 has 2023"
    ),
    bad_answers("300-pull-secrets", PRE + "driver:\n  imagePullSecrets:\n" + "    - s\n" * 300, "more than 256 values"),
    bad_answers(
        "value-600-chars", f"{PRE}operator: {{namespace: {'a' * 600}}}\n", "operator.namespace: a value of 600"
    ),
    bad_answers("python-object-tag", f"{PRE}toolkit: !!python/object:os.system {{}}\n", "toolkit: YAML tags"),
    bad_answers("str-tag", "version: 1\nmode: !!str preinstalled\n", "answers.yaml:2: mode: YAML tags"),
    bad_answers("timestamp-version", driver("version: 2024-01-01, repository: r.io/a"), "driver.version"),
    bad_answers("nul-byte", PRE + "toolkit: {installDir: /opt\0}\n", "malformed YAML"),
    bad_answers("utf16-file", (PRE + "toolkit: {}\n").encode("utf-16"), "not UTF-8 text"),
    bad_answers("latin1-file", b"version: 1\nmode: pr\xe9installed\n", "not UTF-8 text"),
    bad_answers("two-documents", "version: 1\n---\nversion: 1\n", "malformed YAML"),
    bad_answers("duplicate-key", "version: 1\nmode: preinstalled\nmode: upstream\n", "malformed YAML"),
    bad_answers("null-version", "version:\nmode: preinstalled\n", "version: must be the integer 1", "not None"),
    bad_answers("nan-version", "version: .nan\n", "version: must be the integer 1"),
    HostileCase(
        "answers-is-dev-zero",
        ("render", "--answers", "/dev/zero", "--nodes", "{dir}/nodes.json"),
        2,
        files={"nodes.json": GOOD_NODES},
        stderr_has=("/dev/zero: cannot read the file: not text (a NUL byte at byte 0)",),
    ),
    HostileCase(
        "answers-is-a-folder",
        ("render", "--answers", "{dir}", "--nodes", "{dir}/nodes.json"),
        2,
        files={"nodes.json": GOOD_NODES},
        stderr_has=("is a folder; give an answers file",),
    ),
]

# -- field grammars: ASCII only, exact version, image-reference repositories, safe host paths ------------
GRAMMARS: list[HostileCase] = [
    bad_answers("version-true", "version: true\n", "answers.yaml:1: version: must be the integer 1", "not true"),
    bad_answers("version-1.0", "version: 1.0\n", "version: must be the integer 1", "not 1.0"),
    bad_answers("version-quoted", "version: '1'\n", "version: must be the integer 1"),
    bad_answers("driver-fullwidth-digits", driver("version: '５８０.１２６', repository: r.io/a"), "is not a driver"),
    bad_answers("driver-arabic-indic-digits", driver("version: '٥٨٠', repository: r.io/a"), "is not a driver"),
    bad_answers("driver-devanagari-digits", driver("version: '५८०', repository: r.io/a"), "is not a driver"),
    bad_answers("driver-version-newline", driver('version: "580\\n", repository: r.io/a'), "'580\\n' is not"),
    bad_answers("driver-version-cr-esc", driver('version: "580\\r\\e[2K", repository: r.io/a'), "driver.version"),
    bad_answers("driver-version-9-digit-part", driver("version: '580.123456789', repository: r.io/a"), "not a driver"),
    bad_answers("driver-version-5-parts", driver("version: '580.1.2.3.4', repository: r.io/a"), "not a driver"),
    bad_answers(
        "digest-uppercase-hex", driver(f"version: 'sha256:{'A' * 64}', repository: r.io/a", "upstream"), "64 lower-case"
    ),
    bad_answers("repo-myorg", driver("version: '580', repository: MyOrg"), "driver.repository: 'MyOrg' is not"),
    bad_answers("repo-hub-uppercase-path", driver("version: '580', repository: myorg/MyRepo"), "lower-case path"),
    bad_answers("repo-port-too-long", driver("version: '580', repository: 'r.io:999999/a'"), "not a registry"),
    bad_answers("repo-leading-dash", driver("version: '580', repository: -r.io/a"), "not a registry"),
    bad_answers("repo-newline", driver('version: "580", repository: "r.io/a\\nb"'), "driver.repository"),
    bad_answers("repo-unicode", driver("version: '580', repository: r.io/äpfel"), "not a registry"),
    bad_answers(
        "repo-300-chars", driver(f"version: '580', repository: r.io/{'a' * 300}"), "image references allow 255"
    ),
    bad_answers("repo-shell", driver("version: '580', repository: 'r.io/$(reboot)'"), "not a registry"),
    bad_answers("namespace-trailing-newline", f'{PRE}operator: {{namespace: "gpu\\n"}}\n', "operator.namespace"),
    bad_answers("secret-trailing-newline", f'{PRE}driver: {{imagePullSecrets: ["regcred\\n"]}}\n', "Secret name"),
    bad_answers(
        "configmap-fullwidth",
        driver("version: '580', repository: r.io/a, repoConfig: {configMapName: ｒｅｐｏ}", "upstream"),
        "ConfigMap",
    ),
    bad_answers("escape-in-key", 'version: 1\n"\\e[2J\\e]0;owned\\a": 1\n', "unknown key", "\\x1b[2J"),
    bad_answers("c1-in-mode", 'version: 1\nmode: "\\x9bprecompiled"\n', "answers.yaml:2: mode:"),
    bad_path("installdir-root", "toolkit.installDir", "/", "the host's root folder"),
    bad_path("installdir-etc", "toolkit.installDir", "/etc", "is a system folder"),
    bad_path("installdir-usr", "toolkit.installDir", "/usr", "is a system folder"),
    bad_path("installdir-lib64", "toolkit.installDir", "/lib64", "is a system folder"),
    bad_path("installdir-usr-lib", "toolkit.installDir", "/usr/lib", "is a system folder"),
    bad_path("installdir-boot", "toolkit.installDir", "/boot", "is a system folder"),
    bad_path("driverdir-root", "hostPaths.driverInstallDir", "/", "leave driverInstallDir unset"),
    bad_path("driverdir-sys", "hostPaths.driverInstallDir", "/sys", "is a system folder"),
    bad_path("driverdir-proc-sub", "hostPaths.driverInstallDir", "/proc/1/root", "pseudo file system"),
    bad_path("driverdir-dev-shm", "hostPaths.driverInstallDir", "/dev/shm", "pseudo file system"),
    bad_path("installdir-newline", "toolkit.installDir", "/opt/a\nb", "contains '\\n'"),
    bad_path("installdir-nul", "toolkit.installDir", "/opt/a\0b", "contains '\\x00'"),
    bad_path("installdir-command-substitution", "toolkit.installDir", "/opt/$(reboot)", "contains '$' '(' ')'"),
    bad_path("installdir-backtick", "toolkit.installDir", "/opt/`id`", "contains '`'"),
    bad_path("installdir-semicolon", "toolkit.installDir", "/opt/a;rm", "contains ';'"),
    bad_path("installdir-space", "toolkit.installDir", "/opt/my dir", "contains ' '"),
    bad_path("installdir-tilde", "toolkit.installDir", "/opt/~x", "contains '~'"),
    bad_path("installdir-unicode", "toolkit.installDir", "/opt/nvídia", "contains 'í'"),
    bad_path("installdir-escape", "toolkit.installDir", "/opt/\x1b[2Kx", "contains '\\x1b'"),
    # toolkit.env: the operator's env grammar, one-line values, host paths where it takes paths
    bad_answers(
        "toolkit-env-name-escape",
        f'{PRE}toolkit:\n  env: {{"A\\e[2J": "x"}}\n',
        "answers.yaml:4: toolkit.env: ",
        "is not a variable name",
    ),
    bad_answers(
        "toolkit-env-value-newline",
        f'{PRE}toolkit:\n  env: {{CONTAINERD_SOCKET: "/run/a\\n/run/b"}}\n',
        "answers.yaml:4: toolkit.env: ",
        "one line",
    ),
    bad_answers(
        "toolkit-env-relative-socket",
        f"{PRE}toolkit:\n  env: {{CONTAINERD_SOCKET: run/k3s.sock}}\n",
        "answers.yaml:4: toolkit.env: CONTAINERD_SOCKET: 'run/k3s.sock' is not an absolute",
    ),
    bad_answers(
        "toolkit-runtime-unknown",
        f"{PRE}toolkit:\n  runtime: podman\n",
        "answers.yaml:4: toolkit.runtime: 'podman' is not a runtime flavour; valid: auto, containerd",
    ),
]

# -- NodeLists, missing files, flags (was tests/test_bad_input.py) ----------------------------------------
FILES_AND_FLAGS: list[HostileCase] = [
    bad_nodes("nodelist-not-json", "{nodes: [", "not valid JSON"),
    bad_nodes("nodelist-json-array", "[1, 2]", "not a NodeList"),
    bad_nodes("nodelist-no-items", '{"kind": "NodeList"}', "no 'items' list"),
    bad_nodes("nodelist-items-not-list", '{"kind": "NodeList", "items": {}}', "no 'items' list"),
    bad_nodes("nodelist-scalar", "42", "not a NodeList"),
    HostileCase(
        "answers-missing",
        ("render", "--answers", "{dir}/a.yaml", "--nodes", "{dir}/nodes.json"),
        2,
        files={"nodes.json": GOOD_NODES},
        stderr_has=("a.yaml: no such file",),
    ),
    HostileCase(
        "nodelist-missing",
        ("render", "--answers", "{dir}/answers.yaml", "--nodes", "{dir}/n.json"),
        2,
        files={"answers.yaml": GOOD_ANSWERS},
        stderr_has=("n.json: no such file",),
    ),
    bad_answers("binary-file", b"\xff\xfe\x00\x01", "cannot read the file"),
    HostileCase("flag-bad-output", (*RENDER, "-o", "xml"), 2, stderr_has=("invalid choice: 'xml'",)),
    HostileCase("flag-missing-answers", ("render", "--nodes", "n.json"), 2, stderr_has=("--answers",)),
    HostileCase("flag-bad-mode", ("answers", "init", "--mode", "magic"), 2, stderr_has=("invalid choice: 'magic'",)),
    HostileCase("flag-missing-action", ("answers",), 2, stderr_has=("error:",)),
    HostileCase("unknown-command", ("no-such-command",), 2, stderr_has=("invalid choice: 'no-such-command'",)),
    HostileCase(
        "init-refuses-to-overwrite",
        ("answers", "init", "-o", "{dir}/a.yaml"),
        2,
        files={"a.yaml": "keep me"},
        stderr_has=("already exists; pass --force",),
    ),
    HostileCase(
        "init-into-a-folder",
        ("answers", "init", "-o", "{dir}", "--force"),
        2,
        stderr_has=("cannot write: it is a folder", "previous file (if any) is unchanged"),
    ),
    HostileCase(
        "init-under-a-file",
        ("answers", "init", "-o", "{dir}/plain/a.yaml", "--force"),
        2,
        files={"plain": "a file, not a folder"},
        stderr_has=("plain/a.yaml: cannot write",),
    ),
    HostileCase(
        "init-control-chars-in-name",
        ("answers", "init", "-o", "{dir}/\x1b[2J/a.yaml", "--force"),
        0,
        stderr_has=("wrote ",),
    ),
]

# -- start-up: a scenario typo and no terminal are one-line refusals, never a spinning TUI ---------------
START: list[HostileCase] = [
    HostileCase("tui-demo-typo", ("--demo", "nope"), 2, stderr_has=("--demo: unknown scenario 'nope'", "sle-micro")),
    HostileCase("tui-demo-missing-file", ("--demo", "{dir}/none.yaml"), 2, stderr_has=("none.yaml' does not exist",)),
    HostileCase("tui-without-a-terminal", (), 2, stderr_has=("needs a terminal", "gpu-wizard --help")),
    HostileCase(
        "tui-answers-without-a-terminal",
        ("--answers", "{dir}/answers.yaml"),
        2,
        files={"answers.yaml": GOOD_ANSWERS},
        stderr_has=("needs a terminal",),
    ),
    HostileCase(
        "render-demo-typo",
        ("render", "--answers", "{dir}/answers.yaml", "--demo", "sle-micro-precompiledd"),
        2,
        files={"answers.yaml": GOOD_ANSWERS},
        stderr_has=("unknown scenario 'sle-micro-precompiledd'; bundled scenarios:",),
    ),
]

CASES: list[HostileCase] = [*CLASSIC, *BOUNDS, *GRAMMARS, *FILES_AND_FLAGS, *START]
