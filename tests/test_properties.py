"""Property-based tests: the answers parser never crashes, the naming rules hold for any input."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from wizard.engine.answers import AnswersError, dump_answers, parse_answers
from wizard.engine.naming import os_tag, precompiled_image, sanitize_kernel, split_reference, upstream_image

versions = st.lists(st.integers(0, 999).map(str), min_size=1, max_size=4).map(".".join)
kernels = st.text(string.ascii_lowercase + string.digits + ".-_", min_size=1, max_size=40).filter(
    lambda k: k[0].isalnum()
)
os_ids = st.sampled_from(["ubuntu", "rhel", "rocky", "ol", "sles", "sle-micro", "sl-micro", "rhcos", "debian"])
os_versions = st.lists(st.integers(0, 99).map(str), min_size=1, max_size=3).map(".".join)
releases = st.sampled_from(["v25.10.1", "v26.3.3", "v26.7.0"])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_parsed_or_refused_cleanly(text: str) -> None:
    try:
        plan, doc = parse_answers(text, "fuzz.yaml")
    except AnswersError as exc:
        assert exc.errors and all(e.message for e in exc.errors)
    else:
        assert parse_answers(dump_answers(plan, doc))[0] == plan


yaml_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), versions)
answer_docs = st.fixed_dictionaries(
    {"version": st.sampled_from([1, 1, 2, "1"])},
    optional={
        "mode": st.sampled_from(["precompiled", "upstream", "preinstalled", "other", 3]),
        "driver": st.dictionaries(
            st.sampled_from(["version", "repository", "image", "source", "airgapped", "useNvidiaDriverCRD", "x"]),
            yaml_scalars,
        ),
        "toolkit": st.dictionaries(st.sampled_from(["installDir"]), st.one_of(st.text(max_size=15), st.none())),
    },
)


@settings(max_examples=300, deadline=None)
@given(answer_docs)
def test_structured_answers_are_accepted_or_refused_with_a_field(doc: dict[str, object]) -> None:
    import json

    text = json.dumps(doc)  # JSON is YAML
    try:
        parse_answers(text)
    except AnswersError as exc:
        assert all(e.message for e in exc.errors)


@given(versions, kernels, os_ids, os_versions, releases)
def test_precompiled_tag_is_version_kernel_ostag(
    version: str, kernel: str, os_id: str, os_version: str, release: str
) -> None:
    tag_os = os_tag(os_id, os_version, release)
    image = precompiled_image("registry.example.com/mlops", "nvidia-driver", version, kernel, tag_os)
    host, repo, tag = split_reference(image)
    assert (host, repo) == ("registry.example.com", "mlops/nvidia-driver")
    assert tag == f"{version}-{kernel}-{tag_os}"
    assert tag_os.startswith(os_id)


@given(versions, os_ids, os_versions, releases)
def test_upstream_tag_never_carries_the_kernel(version: str, os_id: str, os_version: str, release: str) -> None:
    tag_os = os_tag(os_id, os_version, release)
    image = upstream_image("nvcr.io/nvidia", "driver", version, tag_os)
    assert image == f"nvcr.io/nvidia/driver:{version}-{tag_os}"


@given(os_ids, os_versions)
def test_old_releases_keep_the_full_version_id(os_id: str, os_version: str) -> None:
    assert os_tag(os_id, os_version, "v25.10.1") == f"{os_id}{os_version}"


@given(kernels)
def test_sanitized_kernel_is_stable(kernel: str) -> None:
    once = sanitize_kernel(kernel)
    assert sanitize_kernel(once) == once
    assert "_" not in once and not once.endswith(".") and once == once.lower()
