"""The demo's node shell and kubelet as the host probe DaemonSet uses them: shell grammar, read-only binds,
init containers run through the shell with the kubelet's termination-message rules, the DaemonSet
controller's node fitting (affinity by name, taints)."""

from __future__ import annotations

import base64

from tests.sim_helpers import NS, settle, world
from wizard.cluster.hostprobe import host_findmnt
from wizard.cluster.probeset import daemonset, read_message
from wizard.demo.sim import container, coreutils, nodecmd, nodefs, shell_grammar, smi
from wizard.demo.sim.placement import fits
from wizard.demo.sim.pod_status import MESSAGE_LIMIT, termination_message
from wizard.engine.nodescript import Step
from wizard.engine.nvsmi import parse_table

IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"


def _ctx(read_only: bool = True) -> container.Ctx:
    sim, store = world("noexec-run")
    pod = {
        "metadata": {"name": "p", "namespace": NS},
        "spec": {
            "nodeName": "gpu-a10-01",
            "containers": [
                {
                    "name": "c",
                    "image": IMAGE,
                    "volumeMounts": [{"name": "h", "mountPath": "/host", "readOnly": read_only}],
                }
            ],
            "volumes": [{"name": "h", "hostPath": {"path": "/"}}],
        },
    }
    view = sim._context
    store.create("pods", pod)
    found = view(NS, "p")
    assert found is not None
    return container.make_ctx(found[1], found[0], "c")


def test_the_shell_grammar_the_probe_script_uses() -> None:
    ctx = _ctx()
    script = (
        'o=$(chroot /host cat /etc/hostname 2>&1); c=$?; n=$(printf %s "$o" | wc -c)\n'
        'printf \'%s[%d,%d,"%s"]\' "$s" "$c" "$n" "$(printf %s "$o" | head -c 4 | base64 -w 0)" >/dev/termination-log\n'
        "x='a b'; printf '<%s>' $x; printf '<%s>' \"$x\"; false || echo \"st=$?\"; echo ${c}done # comment"
    )
    code, out, err = nodecmd.run_script(ctx, script)
    assert (code, err) == (0, "")
    assert out == "<a><b><a b>st=1\n0done\n"
    assert ctx.files["/dev/termination-log"] == f'[0,10,"{base64.b64encode(b"gpu-").decode()}"]'


def test_a_read_only_bind_refuses_writes_and_findmnt_tells_the_hosts_own_flags() -> None:
    ctx = _ctx(read_only=True)
    code, _, err = nodecmd.run_script(ctx, "echo x > /host/tmp/f")
    assert code == 1 and err == "sh: can't create /host/tmp/f: Read-only file system\n"
    assert nodecmd.run_script(ctx, "chroot /host test -w /usr/local")[0] == 1  # EROFS through the bind
    bind = nodecmd.run_argv(ctx, ["chroot", "/host", "findmnt", "-n", "-o", "TARGET,OPTIONS", "-T", "/usr"])[1]
    host = nodecmd.run_argv(ctx, ["chroot", "/host", *host_findmnt("/usr")])[1]
    assert bind.split()[1].startswith("ro,") and host.split()[1].startswith("rw,")
    writable = _ctx(read_only=False)
    assert nodecmd.run_script(writable, "chroot /host test -w /usr/local")[0] == 0


def test_the_termination_message_is_the_files_tail_within_the_kubelets_limit() -> None:
    assert termination_message({}, 0, "x" * 5000 + "END", "") == ("x" * 5000 + "END")[-MESSAGE_LIMIT:]
    fallback = {"terminationMessagePolicy": "FallbackToLogsOnError"}
    assert termination_message(fallback, 1, "", "a\nb\n") == "a\nb\n"
    assert termination_message(fallback, 0, "", "a\n") == ""


def test_the_daemonset_controller_fits_by_name_and_taints() -> None:
    spec = daemonset("ds", NS, ["n1"], [Step("t", ("true",))], image=IMAGE, run_id="r", tolerations=[], sleep_s=1)
    pod_spec = spec["spec"]["template"]["spec"]
    node = {"metadata": {"name": "n1", "labels": {}}, "spec": {}}
    assert fits(node, pod_spec) and not fits({**node, "metadata": {"name": "n2", "labels": {}}}, pod_spec)
    tainted = {**node, "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}}
    assert not fits(tainted, pod_spec)
    tolerant = {**pod_spec, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    assert fits(tainted, tolerant)


async def test_probe_daemonset_pods_leave_their_results_in_the_init_containers_message() -> None:
    sim, store = world("noexec-run")
    steps = [Step("hostname", ("cat", "/etc/hostname"), host=True), Step("d", ("test", "-d", "/nope"), host=True)]
    store.create(
        "daemonsets",
        daemonset(
            "probe", NS, ["gpu-a10-01", "gpu-a10-02"], steps, image=IMAGE, run_id="r", tolerations=[], sleep_s=60
        ),
    )
    await settle(sim)
    pods = [p for p in store.list("pods", NS) if p["metadata"]["name"].startswith("probe-")]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-a10-01", "gpu-a10-02"]
    for pod in pods:
        init = pod["status"]["initContainerStatuses"][0]["state"]["terminated"]
        message = read_message(init["message"], steps)
        assert [r.exit_code for r in message.results] == [0, 1] and message.error == ""
        assert message.results[0].output == pod["spec"]["nodeName"]
        assert "running" in pod["status"]["containerStatuses"][0]["state"]


def test_an_eight_gpu_host_nvidia_smi_fits_the_message_squeezed() -> None:
    sim, _ = world("sle-micro-precompiled")
    table = smi.run([], "580.126.09", smi.gpus_of(sim.specs["gpu-h200-01"]))[1]
    assert len(table) > MESSAGE_LIMIT  # the plain table alone would not fit
    smi_step = Step("host-nvidia-smi", ("cat", "/etc/os-release"), host=True, stream=True)
    text = daemonset("p", NS, ["gpu-h200-01"], [smi_step], image=IMAGE, run_id="r", tolerations=[], sleep_s=1)
    script = text["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    assert "tr -s ' =-'" in script
    code, out, _ = nodecmd.run_argv(_ctx(), ["tr", "-s", " =-"], table)
    assert code == 0 and len(out) < 1600
    report = parse_table(out, 0)
    assert report.ok and report.gpu_count == 8 and report.driver_version == "580.126.09"


def test_a_script_is_parsed_once_however_many_nodes_run_it() -> None:
    """Every node of a probe runs the same script text: its grammar (and its substitutions') is read once."""
    ctx = _ctx()
    script = (
        "printf '{\"r\":[' >/dev/termination-log; o=$(chroot /host cat /etc/hostname 2>&1); c=$?\n"
        'n=$(printf %s "$o" | wc -c); b=$(printf %s "$o" | head -c 999 | base64 -w 0)\n'
        'printf \'[%d,%d,"%s"]]}\' "$c" "$n" "$b" >>/dev/termination-log'
    )
    shell_grammar.parse.cache_clear()
    first = nodecmd.run_script(container.make_ctx(ctx.view, ctx.pod, "c"), script)
    texts = shell_grammar.parse.cache_info().misses
    for _ in range(50):
        again = container.make_ctx(ctx.view, ctx.pod, "c")
        assert nodecmd.run_script(again, script) == first
        assert again.files["/dev/termination-log"] == f'{{"r":[[0,10,"{base64.b64encode(b"gpu-a10-01").decode()}"]]}}'
    assert shell_grammar.parse.cache_info().misses == texts == 4  # the script and its three substitutions


def test_words_without_expansions_are_resolved_when_parsed() -> None:
    ((_, (command,)),) = shell_grammar.parse("printf '' a\"b\" $x >/dev/null")
    assert [w.literal for w in command.words] == [["printf"], [""], ["ab"], None]
    ((_, (assign,)),) = shell_grammar.parse("o=$(true) p=x")
    assert not assign.words and [(name, value.literal) for name, value in assign.assignments] == [
        ("o", None),
        ("p", ["x"]),
    ]


def test_a_nodes_files_are_worked_out_once_per_view() -> None:
    ctx = _ctx()
    assert nodefs.host_files(ctx.view) is nodefs.host_files(ctx.view)
    assert nodefs.host_dirs(ctx.view) is nodefs.host_dirs(ctx.view)
    assert ctx.view.mount("/usr/local") is ctx.view.mount("/usr/local")


def test_printf_repeats_its_format_for_extra_arguments() -> None:
    assert coreutils.printf(["%s-%d\\n", "a", "1", "b", "2"]) == (0, "a-1\nb-2\n", "")
    assert coreutils.printf(["x\\ty%%%s", "z"]) == (0, "x\ty%z", "")
    assert coreutils.printf(["<%d>", "q"]) == (1, "<0>", "printf: q: invalid number\n")


def test_a_quoted_parameter_is_one_field_even_when_empty_or_spaced() -> None:
    ((_, (command,)),) = shell_grammar.parse('printf "<%s>" "$x" "$?" "$y" $x')
    assert [w.variable for w in command.words] == [None, None, "x", "?", "y", None]
    code, out, _ = nodecmd.run_script(_ctx(), 'x=\'a  b\'; false; printf \'<%s>\' "$x" "$?" "$y" $x')
    assert (code, out) == (0, "<a  b><1><><a><b>")


def test_an_unquoted_parameter_after_empty_quotes_is_still_split() -> None:
    """``""$x`` is a quoted empty string joined to an unquoted expansion: sh splits it (review found the
    one-field shortcut taken for it)."""
    code, out, _ = nodecmd.run_script(_ctx(), "x='a  b'; printf '<%s>' \"\"$x")
    assert (code, out) == (0, "<a><b>")
