"""The demo's node commands and kubelet as the host probes use them: gpu-wizard's two probe script shapes
answered step by step (no shell runs them; any other script is refused), read-only binds, the kubelet's
termination-message rules, the DaemonSet controller's node fitting (affinity by name, taints)."""

from __future__ import annotations

from tests.helpers.sim import NS, settle, world
from wizard.cluster.probes.hostprobe import HostRun, host_findmnt
from wizard.cluster.probes.probeset import daemonset, read_message
from wizard.cluster.probes.probeset import script as daemonset_script
from wizard.demo.sim import container, nodecmd, nodefs, smi
from wizard.demo.sim.placement import fits
from wizard.demo.sim.pod_status import MESSAGE_LIMIT, termination_message
from wizard.engine.hostdoctor import DoctorTarget, host_steps, read_host
from wizard.engine.modes import Mode
from wizard.engine.nodescript import MARK, Step, StepSplitter
from wizard.engine.nodescript import script as exec_script
from wizard.engine.nvsmi import parse_table

IMAGE = "nvcr.io/nvidia/cloud-native/k8s-driver-manager:v0.12.0"


def _ctx(read_only: bool = True, scenario: str = "noexec-run", node: str = "gpu-a10-01") -> container.Ctx:
    sim, store = world(scenario)
    pod = {
        "metadata": {"name": "p", "namespace": NS},
        "spec": {
            "nodeName": node,
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


def test_the_probe_daemonsets_script_is_answered_step_by_step() -> None:
    ctx = _ctx()
    steps = [
        Step("hostname", ("cat", "/etc/hostname"), host=True),
        Step("quoted", ("test", "-d", "/a dir; echo"), host=True),
        Step("smi", ("cat", "/etc/hostname"), host=True, stream=True),
    ]
    assert nodecmd.run_script(ctx, daemonset_script(steps)) == (0, "", "")
    message = read_message(ctx.files["/dev/termination-log"], steps)
    assert message.error == "" and [(r.output, r.exit_code) for r in message.results] == [
        ("gpu-a10-01", 0),
        ("", 1),
        ("gpu-a10-01", 0),
    ]


def test_the_exec_script_is_answered_with_its_markers() -> None:
    steps = [Step("uname", ("uname", "-r"), host=True), Step("missing", ("test", "-e", "/nope"), host=True)]
    code, out, err = nodecmd.run_script(_ctx(), exec_script(steps, "/host"))
    splitter = StepSplitter(steps, lambda _s, _l: None)
    splitter.feed_lines("stdout", out.splitlines())
    assert (code, err) == (0, "") and out.count(MARK) == 2
    assert [r.exit_code for r in splitter.results()] == [0, 1] and splitter.results()[0].output.startswith("5.")


def test_a_script_of_another_shape_is_refused_not_run() -> None:
    for script in ("echo x > /host/tmp/f", "uname -r; rm -rf /", daemonset_script([]).replace("s=", "rm -rf /")):
        code, out, err = nodecmd.run_script(_ctx(), script)
        assert (code, out) == (2, "") and "answers only gpu-wizard's probe scripts" in err


def test_a_read_only_bind_refuses_writes_and_findmnt_tells_the_hosts_own_flags() -> None:
    ctx = _ctx(read_only=True)
    code, _, err = nodecmd.run_argv(ctx, ["touch", "/host/tmp/f"])
    assert code == 1 and err == "touch: cannot touch '/host/tmp/f': Read-only file system\n"
    assert nodecmd.run_argv(ctx, ["chroot", "/host", "test", "-w", "/usr/local"])[0] == 1  # EROFS through the bind
    bind = nodecmd.run_argv(ctx, ["chroot", "/host", "findmnt", "-n", "-o", "TARGET,OPTIONS", "-T", "/usr"])[1]
    host = nodecmd.run_argv(ctx, ["chroot", "/host", *host_findmnt("/usr")])[1]
    assert bind.split()[1].startswith("ro,") and host.split()[1].startswith("rw,")
    writable = _ctx(read_only=False)
    assert nodecmd.run_argv(writable, ["chroot", "/host", "test", "-w", "/usr/local"])[0] == 0


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


def test_a_hosts_nvidia_smi_fits_the_message_squeezed() -> None:
    sim, _ = world("sle-micro-precompiled")
    assert len(smi.run([], "580.126.09", smi.gpus_of(sim.specs["gpu-h200-01"]))[1]) > MESSAGE_LIMIT  # 8 GPUs
    ctx = _ctx(scenario="preinstalled", node="gpu-l40s-01")
    table = nodecmd.run_argv(ctx, ["chroot", "/host", "nvidia-smi"])[1]
    smi_step = Step("host-nvidia-smi", ("nvidia-smi",), host=True, stream=True)
    text = daemonset_script([smi_step])
    assert "tr -s ' =-'" in text and nodecmd.run_script(ctx, text)[0] == 0
    message = read_message(ctx.files["/dev/termination-log"], [smi_step])
    assert message.truncated == [] and len(message.results[0].output) < len(table) // 2
    report = parse_table(message.results[0].output, 0)
    assert report.ok and report.gpu_count == 4 and report.driver_version == "580.126.20"


def test_a_nodes_files_are_worked_out_once_per_view() -> None:
    ctx = _ctx()
    assert nodefs.host_files(ctx.view) is nodefs.host_files(ctx.view)
    assert nodefs.host_dirs(ctx.view) is nodefs.host_dirs(ctx.view)
    assert ctx.view.mount("/usr/local") is ctx.view.mount("/usr/local")


def test_nouveau_loaded_at_boot_below_the_kubernetes_modules_is_seen_by_the_probe() -> None:
    """docs/real-cluster.md: ``lsmod`` lists the newest modules first, so a real node's list starts with the kubelet's
    and the CNI's modules and a ``nouveau`` loaded at boot comes near the end, past what the probe keeps of a step
    among apply's ~27. The demo lists them that way, and the host steps still see nouveau there."""
    ctx = _ctx(scenario="mixed-trouble", node="gpu-l40s-1")
    code, listed, _ = nodecmd.run_argv(ctx, ["chroot", "/host", "cat", "/proc/modules"])
    names = [line.split()[0] for line in listed.splitlines()]
    assert code == 0 and names.index("nouveau") > names.index("overlay") > 5, names
    assert len(listed[: listed.index("nouveau")].encode()) > 400  # far past one step's share of the 4096 bytes
    host = host_steps(DoctorTarget(Mode.UPSTREAM), ["ubuntu"])
    steps = [*host, *(Step(f"path-{i}", host_findmnt("/run"), host=True) for i in range(27 - len(host)))]
    assert nodecmd.run_script(ctx, daemonset_script(steps)) == (0, "", "")
    message = read_message(ctx.files["/dev/termination-log"], steps)
    cut = HostRun("gpu-l40s-1", results=message.results, truncated=message.truncated).cut()  # as host_states reads it
    state = read_host("gpu-l40s-1", "ubuntu", host, message.results[: len(host)], cut)
    assert message.error == "" and not [c for c in cut if c in {s.check for s in host}], message.truncated
    assert state.nouveau is True and state.unknown == {}, state.unknown
    assert state.free_mb and all(free > 0 for free, _ in state.free_mb.values())
