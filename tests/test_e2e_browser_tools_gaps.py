"""Issue 24 end to end: the findings reproduced on the real server, browser and extension, and the paths the tools
had no end-to-end test for (tests/toolsite: allowed.test allowed, denied.test denied)."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO
from .e2e import requires_chromium
from .shared_bridge import OpenShared
from .test_e2e_browser_tools import ALLOWED, MUTATE, bridge, fails, ok, snapshot_ref
from .test_e2e_link import (
    eventually,
    extension_worker,
    linked_status,
    open_page,
    page_eval,
    pids_of,
    wait_group_gone,
)
from .toolsite.fixture import ToolSite

pytestmark = [requires_chromium, pytest.mark.chromium]


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_networkidle_leaves_a_denied_page(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/form"})
        target = next(p["targetId"] for p in await dt.pages("https://allowed.test/form"))
        await page_eval(dt, target, "location.href = 'https://denied.test/secret'; 1")
        await eventually(lambda: dt.pages("https://denied.test/"), 10, "the tab shows the denied URL")

        async def refused() -> bool:  # once the server has heard of the new URL
            res = await b.call("get_text", {})
            return bool(res.is_error) and res.structured_content["error"]["code"] == "policy_denied"

        await eventually(refused, 10, "reads refused on the denied page")
        # Leaving it is allowed, whatever the wait: networkidle needs the network events, which must not be refused.
        got = await ok(b, "navigate", {"url": "https://allowed.test/", "wait_until": "networkidle"})
        assert got["url"] == "https://allowed.test/"
        log = await ok(b, "network_log", {})
        assert not any("denied.test" in e["url"] for e in log["entries"])
        assert not toolsite.requested("denied.test")


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_the_network_log_runs_from_the_lease_with_headers_redacted_and_bodies_on_request(
        toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/"})
        target = next(p["targetId"] for p in await dt.pages("https://allowed.test/"))
        await page_eval(dt, target, "document.cookie = 'sid=c00kie'; fetch('/api/data', {headers: "
                        "{Authorization: 'Bearer s3cret', 'X-Plain': 'shown'}}).then(r => r.text())")
        # The first network_log call sees what happened before it: the page itself and the fetch.
        log = await ok(b, "network_log", {"headers": True})
        assert log["started"] is False
        urls = [e["url"] for e in log["entries"]]
        assert "https://allowed.test/" in urls and "https://allowed.test/api/data" in urls

        async def answered() -> Any:
            # The response's event travels through the extension, apart from the page's own promise (which
            # resolved over the test's DevTools connection): the entry gets its response headers a moment later.
            got = await ok(b, "network_log", {"headers": True})
            api = next(e for e in got["entries"] if e["url"].endswith("/api/data"))
            return (got, api) if api.get("responseHeaders") else None

        log, api = await eventually(answered, 10, "the fetch's response in the network log")
        sent = {h["name"].lower(): h["value"] for h in api["requestHeaders"]}
        assert sent["authorization"] == "[redacted]" and sent["x-plain"] == "shown"
        assert "s3cret" not in str(log) and "c00kie" not in str(log)
        assert {h["name"].lower() for h in api["responseHeaders"]} >= {"content-type"}
        # Bodies on request, capped; text only unless asked.
        got = await ok(b, "network_log", {"url_contains": "api/data", "body_of": api["id"], "body_max_chars": 5})
        assert got["body"]["text"] == '{"ite' and got["body"]["truncated"] is True and got["body"]["size"] > 5
        assert "requestHeaders" not in got["entries"][0]
        await fails(b, "network_log", {"body_of": 99999}, "invalid_argument")


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_emulation_and_a_screenshot_too_big_for_one_frame(
        toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b, b.devtools() as dt:
        await ok(b, "tab_new", {"url": "https://allowed.test/tall"})
        target = next(p["targetId"] for p in await dt.pages("https://allowed.test/tall"))
        got = await ok(b, "emulate", {"width": 1000, "height": 700, "device_scale_factor": 3,
                                      "color_scheme": "dark", "user_agent": "AgentPhone/1.0", "cpu_throttling": 2})
        assert got["viewport"] == {"width": 1000, "height": 700, "deviceScaleFactor": 3, "mobile": False}
        seen = await page_eval(dt, target, "[innerWidth, devicePixelRatio, navigator.userAgent, "
                               "matchMedia('(prefers-color-scheme: dark)').matches]")
        assert seen == [1000, 3, "AgentPhone/1.0", True]
        # A full page of 20,000 px at device scale 3: far more than one 4 MiB frame as PNG.
        res = await b.call("screenshot", {"mode": "full_page"})
        assert not res.is_error, res.content[0].text
        shot = res.structured_content
        assert shot["mimeType"] == "image/jpeg" and "JPEG" in shot["warning"]
        assert shot["truncated"] is True and shot["fullHeight"] > 20_000
        assert res.content[1].mime_type == "image/jpeg"
        # resize keeps the device scale; network throttling; reset gives the browser's own back.
        assert (await ok(b, "resize", {"width": 800, "height": 600}))["viewport"]["deviceScaleFactor"] == 3
        assert await page_eval(dt, target, "innerWidth") == 800
        assert (await ok(b, "emulate", {"network": "offline"}))["network"] == "offline"
        fetched = "fetch('/api/data').then(r => r.ok, () => false)"
        assert await page_eval(dt, target, fetched) is False
        cleared = await ok(b, "emulate", {"reset": True})
        assert cleared["viewport"] is None and cleared["userAgent"] is None and cleared["network"] is None
        assert await page_eval(dt, target, "[devicePixelRatio, navigator.userAgent.includes('AgentPhone')]") == \
            [1, False]
        assert await page_eval(dt, target, fetched) is True
        await fails(b, "emulate", {"width": 10}, "invalid_argument")


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_upload_file_sends_project_files_only(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    async with shared_tools_bridge() as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/upload"})
        got = await ok(b, "upload_file", {"selector": "#one", "paths": ["README.md"]})
        size = (REPO / "README.md").stat().st_size
        assert got["files"] == [{"path": "README.md", "size": size}] and got["element"]["tag"] == "input"
        await ok(b, "wait_for", {"text": "one:README.md"})
        await ok(b, "upload_file", {"selector": "#many", "paths": ["docs/tools.md", "docs/security.md"]})
        await ok(b, "wait_for", {"text": "many:security.md"})
        # The ask's path rules: nothing outside the project, nothing into a single input's many, no non-file input.
        for paths in (["../../etc/passwd"], ["/etc/passwd"], ["no-such-file.txt"]):
            await fails(b, "upload_file", {"selector": "#one", "paths": paths}, "file_refused")
        await fails(b, "upload_file", {"selector": "#one", "paths": ["README.md", "docs/tools.md"]},
                    "invalid_argument")
        await fails(b, "upload_file", {"selector": "#text", "paths": ["README.md"]}, "element_not_interactable")
        text = (await ok(b, "get_text", {"selector": "#got"}))["text"]
        assert "passwd" not in text


async def test_download_saves_into_the_chosen_folder_only(toolsite: ToolSite, tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    folder.mkdir()
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED, "--download-dir", str(folder)) as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/download"})
        got = await ok(b, "download", {"selector": "#report"})
        assert got["name"] == "report.csv" and got["mimeType"] == "text/csv"
        assert got["size"] == len(b"name,value\nalpha,1\nbeta,2\n")
        assert Path(got["path"]).parent == folder.resolve()
        assert (folder / "report.csv").read_text() == "name,value\nalpha,1\nbeta,2\n"
        again = await ok(b, "download", {"url": "https://allowed.test/files/report.csv"})
        assert again["path"] != got["path"] and Path(again["path"]).parent == folder.resolve()
        assert again["sourceUrl"] == "https://allowed.test/files/report.csv"
        await fails(b, "download", {"url": "https://denied.test/files/report.csv"}, "policy_denied")
        await fails(b, "download", {"selector": "#report", "url": "https://allowed.test/x"}, "invalid_argument")
        assert sorted(p.name for p in folder.iterdir()) == sorted({Path(got["path"]).name, Path(again["path"]).name})
        assert not toolsite.requested("denied.test")
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED) as b:  # no folder chosen: refused
        await ok(b, "tab_new", {"url": "https://allowed.test/download"})
        assert "--download-dir" in await fails(b, "download", {"selector": "#report"}, "invalid_argument")


async def test_download_keeps_what_a_click_starts_from_script(toolsite: ToolSite, tmp_path: Path) -> None:
    """No link to fetch: a blob the page makes (its URL revoked at once), a `#` link whose script does the same, a
    `location` set to an attachment. The browser's download is caught into the folder; what starts none, or goes to
    a denied host, is a typed error that leaves nothing behind."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    made_csv = "id,total\n1,40\n2,2\n"
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED, "--download-dir", str(folder)) as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/download"})
        made = await ok(b, "download", {"selector": "#export"})
        assert (made["name"], made["size"], made["mimeType"]) == ("export.csv", len(made_csv), "text/csv")
        assert made["sourceUrl"].startswith("blob:https://allowed.test/"), made
        assert Path(made["path"]) == folder.resolve() / "export.csv"
        assert (folder / "export.csv").read_text() == made_csv
        again = await ok(b, "download", {"selector": "#export-link"})  # href="#": clicked, never fetched
        assert again["name"] == "export (1).csv" and Path(again["path"]).read_text() == made_csv
        sent = await ok(b, "download", {"selector": "#attachment"})
        assert (sent["name"], sent["sourceUrl"]) == ("report.csv", "https://allowed.test/files/report.csv")
        assert (folder / "report.csv").read_text() == "name,value\nalpha,1\nbeta,2\n"
        assert sent["url"] == "https://allowed.test/download"  # an attachment does not navigate the tab
        assert "no download" in await fails(b, "download", {"selector": "#nothing", "timeout_s": 2}, "timeout")
        # The extension fails the navigation before it is sent, so no download begins; the tab shows the refusal.
        assert "denied.test" in await fails(b, "download", {"selector": "#denied-script", "timeout_s": 2},
                                            "policy_denied")
        assert not toolsite.requested("denied.test")
        await ok(b, "navigate", {"url": "https://allowed.test/download"})
        # Only the three files: no staging folder, no partial file.
        assert sorted(p.name for p in folder.iterdir()) == ["export (1).csv", "export.csv", "report.csv"]
        # The tab still works after the catches.
        assert (await ok(b, "download", {"selector": "#report"}))["name"] == "report (1).csv"


async def test_download_file_names_stay_plain_names() -> None:
    from actors.browser_tools.downloads import file_name

    assert file_name('attachment; filename="../../etc/passwd"', "https://a.test/x") == "passwd"
    assert file_name("attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf", "https://a.test/x") == "résumé.pdf"
    assert file_name("", "https://a.test/dir/..%2F..%2Fsecret.txt") == "secret.txt"
    assert file_name("", "https://a.test/") == "download"
    assert file_name('inline; filename=".bashrc"', "https://a.test/") == "bashrc"


async def test_which_links_are_fetched_and_which_clicked() -> None:
    from actors.browser_tools.downloads import fetchable

    page = "https://a.test/download?x=1"
    assert fetchable("https://a.test/files/r.csv", page) == "https://a.test/files/r.csv"
    assert fetchable("https://b.test/download?x=1#part", page) == "https://b.test/download?x=1#part"  # elsewhere
    for clicked in ("https://a.test/download?x=1#", "https://a.test/download?x=1#top", "javascript:void(0)",
                    "blob:https://a.test/0d1c", "data:text/csv,a", None, 3):
        assert fetchable(clicked, page) is None, clicked


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_paths_without_an_end_to_end_test_before(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    """type with key_events and submit; double and right clicks and modifiers; snapshot and extract_links filters;
    wait_for attached / hidden / detached; releasing an adopted tab."""
    async with shared_tools_bridge() as b, b.devtools() as dt:
        # The user's own tab, opened first (a tab opened while one of the tools' is in front counts as its popup).
        await open_page(dt, "https://allowed.test/form")
        await ok(b, "tab_new", {"url": "https://allowed.test/input"})
        # wait_for each element state the page gets to after 300 ms.
        await ok(b, "wait_for", {"selector": "#added", "state": "attached"})
        await ok(b, "wait_for", {"selector": "#doomed", "state": "detached"})
        await ok(b, "wait_for", {"selector": "#later", "state": "visible"})
        await ok(b, "wait_for", {"selector": "#nothing-here", "state": "hidden"})

        await ok(b, "type", {"selector": "#q", "text": "abc", "key_events": True, "submit": True})
        await ok(b, "wait_for", {"text": "submit:abc"})
        log = (await ok(b, "get_text", {"selector": "#log"}))["text"]
        assert "keydown:a" in log and "keydown:c" in log and "keydown:Enter" in log

        await ok(b, "click", {"selector": "#target", "click_count": 2})
        await ok(b, "click", {"selector": "#target", "button": "right"})
        await ok(b, "click", {"selector": "#target", "modifiers": ["Shift", "Alt"]})
        await ok(b, "wait_for", {"text": "click:1:sa"})
        log = (await ok(b, "get_text", {"selector": "#log"}))["text"]
        assert "dblclick" in log and "click:2:" in log and "contextmenu" in log

        snap = (await ok(b, "snapshot", {"interactive_only": True}))["snapshot"]
        assert 'button "Target"' in snap and "Doomed" not in snap and 'heading "Input"' not in snap
        buttons = (await ok(b, "snapshot", {"roles": ["button"]}))["snapshot"]
        assert 'button "Target"' in buttons and 'link "Form page"' not in buttons
        # max_depth only cuts under kept nodes (this page is almost flat): no bigger than the whole
        assert (await ok(b, "snapshot", {"max_depth": 1}))["size"]["nodes"] <= \
            (await ok(b, "snapshot"))["size"]["nodes"]
        links = (await ok(b, "extract_links", {"internal_only": True}))["links"]
        assert {link["href"] for link in links} == {"https://allowed.test/form", "https://allowed.test/long"}
        assert [link["text"] for link in (await ok(b, "extract_links", {"contains": "long"}))["links"]] == \
            ["Long page"]
        assert len((await ok(b, "extract_links", {"limit": 1}))["links"]) == 1

        # Releasing an adopted tab: it stays open, the tools no longer hold it.
        listing = await ok(b, "tabs_list")
        free = next(t for t in listing["tabs"] if t["url"] == "https://allowed.test/form" and t["owner"] == "free")
        assert (await ok(b, "tab_select", {"tab_id": free["tabId"]}))["owner"] == "adopted"
        released = await ok(b, "tab_close", {})
        assert released["closed"] is False and released["released"] is True
        assert await dt.pages("https://allowed.test/form")  # still open
        again = next(t for t in (await ok(b, "tabs_list"))["tabs"] if t["tabId"] == free["tabId"])
        assert again["owner"] == "free" and again["current"] is False


async def test_a_relaunch_makes_the_old_tab_ids_a_typed_error(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED) as b:
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/form"}))["tabId"]
        _, pid = await pids_of(b)
        os.killpg(pid, signal.SIGKILL)  # the browser dies; the next call launches another
        await wait_group_gone(pid)
        for args in ({}, {"tab_id": tab}):  # the remembered current tab, and its id named outright
            assert "not known to the current browser" in await fails(b, "get_text", args, "target_gone")
        assert "not known to the current browser" in await fails(b, "tab_select", {"tab_id": tab}, "target_gone")
        assert (await b.status())["browser"]["pid"] != pid
        # (Before the fix this Chromium said "tab N was closed": a new browser's ids did not collide here. With
        # colliding ids the old current tab was claimed: tests/test_browser_tools_gaps.py reproduces that.)
        fresh = await ok(b, "tab_new", {"url": "https://allowed.test/"})
        assert (await ok(b, "get_text", {"tab_id": fresh["tabId"]}))["url"] == "https://allowed.test/"


async def test_a_worker_restart_keeps_the_held_tab(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED) as b, b.devtools() as dt:
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/form"}))["tabId"]
        await ok(b, "type", {"selector": "#name", "text": "Ada"})
        before = (await b.status())["extension"]["since"]
        worker = await extension_worker(dt)
        assert worker is not None
        assert (await dt.send("Target.closeTarget", {"targetId": worker["targetId"]}))["success"]
        await eventually(lambda: _relinked(b, before), 30, "the extension reconnected")
        # The same tab, still held and current: re-attached on the next call, its buffers kept.
        got = await ok(b, "query", {"selector": "#name", "what": "form_values"})
        assert got["tabId"] == tab and "Ada" in str(got)
        assert (await ok(b, "type", {"selector": "#name", "text": " L.", "clear": False}))["value"] == "Ada L."
        assert any(e["url"] == "https://allowed.test/form" for e in (await ok(b, "network_log"))["entries"])


async def _relinked(b: Any, before: Any) -> bool:
    link = (await b.status())["extension"]
    return bool(link["connected"]) and link["since"] != before


@pytest.mark.slow  # the relay's 45 s of silence (actors/relay DEAD_AFTER_S): about a minute
async def test_the_drop_on_heartbeat_silence_keeps_the_held_tab(toolsite: ToolSite, tmp_path: Path) -> None:
    async with bridge(toolsite, tmp_path, *MUTATE, *ALLOWED) as b, b.devtools() as dt:
        tab = (await ok(b, "tab_new", {"url": "https://allowed.test/form"}))["tabId"]
        await ok(b, "type", {"selector": "#name", "text": "Ada"})
        worker = await extension_worker(dt)
        assert worker is not None
        session = (await dt.send("Target.attachToTarget", {"targetId": worker["targetId"], "flatten": True}))[
            "sessionId"]
        await dt.send("Debugger.enable", {}, session)
        await dt.send("Debugger.pause", {}, session)  # the worker falls silent: no pings, no answers

        async def dropped() -> bool:
            drop = (await b.status())["extension"]["lastDrop"]
            return drop is not None and "heartbeat" in str(drop)

        await eventually(dropped, 90, "the server dropped the silent link")
        await dt.send("Debugger.resume", {}, session)
        await dt.send("Target.detachFromTarget", {"sessionId": session})
        await eventually(lambda: linked_status(b, 60), 90, "the extension reconnected")
        got = await ok(b, "query", {"selector": "#name", "what": "form_values"})
        assert got["tabId"] == tab and "Ada" in str(got)


@pytest.mark.bridge_flags(*MUTATE, *ALLOWED)
async def test_a_srcdoc_frame_is_judged_by_its_origin(toolsite: ToolSite, shared_tools_bridge: OpenShared) -> None:
    """An about:srcdoc frame is its parent's document: the extension refused every click in one (its URL is not
    on an allowed domain) though the tools read it. A sandboxed one (an opaque origin) stays sealed."""
    async with shared_tools_bridge() as b:
        await ok(b, "tab_new", {"url": "https://allowed.test/srcdoc"})
        snap = (await ok(b, "snapshot"))["snapshot"]
        await ok(b, "click", {"ref": snapshot_ref(snap, 'button "Inline button"')})
        assert 'button "Pressed"' in (await ok(b, "snapshot"))["snapshot"]
        assert "Sandboxed button" not in snap
