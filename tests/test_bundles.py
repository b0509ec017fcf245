"""Bundle plans (issue 35, item 5): every text file once, in as few uploads as fit the site's limits, binary files
on their own; a plan over the site's count refused before anything is sent."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.protocol.common import ProviderName
from actors.protocol.provider import UploadLimits, upload_limits
from supervisor import bundles
from supervisor.attachments import ProjectFile, inline_block
from supervisor.errors import FileRefused

SITE = UploadLimits(files=10, file_bytes=100 * 10**6)


def text(rel: str, body: str) -> ProjectFile:
    data = body.encode()
    return ProjectFile(Path(rel), rel, len(data), True, data)


def binary(rel: str, size: int = 100) -> ProjectFile:
    return ProjectFile(Path(rel), rel, size, False, b"\x00" * size)


def test_no_bundles_up_to_the_sites_count_unless_asked() -> None:
    files = [text(f"f{i}.py", "x") for i in range(10)]
    assert bundles.plan(files, SITE, None) is None
    assert bundles.plan(files, SITE, False) is None
    plan = bundles.plan(files, SITE, True)
    assert plan is not None and len(plan.bundles) == 1 and plan.alone == ()
    with pytest.raises(FileRefused, match="takes at most 10"):
        bundles.plan([*files, text("g.py", "y")], SITE, False)


def test_a_bundle_heads_each_file_by_its_path_after_an_index() -> None:
    files = [text("src/a.py", "print(1)\n"), text("README.md", "# Hi\n"), binary("logo.png")] + [
        text(f"t/{i}.txt", f"line {i}\n") for i in range(10)]
    plan = bundles.plan(files, SITE, None)
    assert plan is not None
    assert [u.rel for u in plan.uploads] == ["ai-bridge-bundle-1-of-1.md", "logo.png"]
    body = plan.bundles[0].data.decode()
    assert body.startswith("ai-bridge bundle 1 of 1: 12 project files")
    assert "\n- src/a.py\n- README.md\n" in body
    assert inline_block(files[0]) in body and inline_block(files[1]) in body
    assert body.index("`src/a.py`") < body.index("`README.md`") < body.index("`t/9.txt`")


def test_too_many_binary_files_are_refused_naming_the_counts() -> None:
    files = [binary(f"img{i}.png") for i in range(10)] + [text(f"f{i}.py", "x") for i in range(5)]
    with pytest.raises(FileRefused, match=r"need 11 uploads \(1 bundle of text, 10 files on their own, 10 of them "
                       r"binary\); the site takes at most 10"):
        bundles.plan(files, SITE, None)


def test_a_text_file_too_big_for_a_bundle_goes_on_its_own() -> None:
    small = UploadLimits(files=10, file_bytes=4000)
    files = [text("big.txt", "b" * 5000), *(text(f"f{i}.py", "x" * 100) for i in range(12))]
    plan = bundles.plan(files, small, None)
    assert plan is not None and [f.rel for f in plan.alone] == ["big.txt"]
    assert all(len(b.data) <= small.file_bytes for b in plan.bundles)


def test_limits_of_two_sites_are_what_both_take() -> None:
    both = upload_limits(list(ProviderName))
    assert both.files == 10 and both.file_bytes == 100 * 10**6
    assert upload_limits([ProviderName.CHATGPT]).file_bytes == 512 * 10**6


names = st.text(alphabet="abcdefghij/_.", min_size=1, max_size=12).map(lambda s: "p/" + s.strip("/"))


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=80), n_binary=st.integers(0, 4),
       room=st.integers(600, 20_000), bundle=st.sampled_from([None, True]))
def test_every_text_file_once_within_the_limits(sizes: list[int], n_binary: int, room: int,
                                                bundle: bool | None) -> None:
    limits = UploadLimits(files=10, file_bytes=room + 512)
    files = [text(f"d{i}/m{i}.py", f"#{i}#" + "z" * size) for i, size in enumerate(sizes)]
    files += [binary(f"b{i}.bin") for i in range(n_binary)]
    try:
        plan = bundles.plan(files, limits, bundle)
    except FileRefused as exc:
        assert "the site takes at most 10" in str(exc)
        # Refused only when first fit cannot do better: any two of its bundles hold more than one bundle's room,
        # so k bundles mean the text costs over (k - 1) / 2 bundles.
        need = sum(bundles._cost(f, inline_block(f).encode()) for f in files if f.text)
        assert need > (10 - n_binary) * room / 2
        return
    if plan is None:
        assert bundle is None and len(files) <= 10
        return
    assert len(plan.uploads) <= 10
    whole = "".join(b.data.decode() for b in plan.bundles)
    for f in files:
        if f.text and f not in plan.alone:
            assert whole.count(f"- {f.rel}\n") == 1  # in the index
            assert whole.count(inline_block(f)) == 1
    assert all(len(b.data) <= limits.file_bytes for b in plan.bundles)
    assert [f for f in files if not f.text] == [f for f in plan.alone if not f.text]
