"""The mutation gate (issue 41): the bugs we must never ship, each put into a scratch copy of the checkout on its own,
and the tests that guard it run against it. A mutation the tests do not catch ("survived") fails the gate.

A mutation is a small, exact source edit: a file, the text to find there (exactly once, or the gate stops at once and
says so: it cannot rot silently), its replacement, and the tests that must fail with it. `MUTATIONS` below is the
whole list, one entry per promise, in the order of the docs that make them (docs/security.md first).

    python tests/mutation_gate.py             # every mutation; exit 1 if one survives or a run goes wrong
    python tests/mutation_gate.py -k relay    # only those whose name contains "relay"
    python tests/mutation_gate.py --list      # the list, with each one's guards
    python tests/mutation_gate.py --check     # only check that every text to find is still there (no tests run)
    python tests/mutation_gate.py --baseline  # first run all the guards unmutated (they must pass)

Each mutation runs in a scratch copy of the checkout's files (tracked and untracked, not ignored, with the
checkout's bytecode: only the mutated file is compiled again), with that copy first on PYTHONPATH so that every
process the tests start (servers, CLIs) imports the mutated code, and the copy's extension/ is the one loaded. Only
its guards run: ``pytest -n 1`` there, its one worker in a network namespace of its own (tests/netns.py), several
mutations at once (``--jobs``, default cores + 2: end-to-end tests wait more than they compute). ``CI`` is unset for
these runs: a guard that skips (a missing tool) must count as not catching, not as a failure that "kills". The gate
prints one line per mutation (killed or survived, by which tests, its time) and the total time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    promise: str  # what breaks, in the words of the doc that promises it
    file: str  # relative to the checkout
    find: str  # must occur exactly once in `file`
    replace: str
    tests: tuple[str, ...]  # pytest node ids (a test function without [params] runs all its parameters)


def m(name: str, promise: str, file: str, find: str, replace: str, *tests: str) -> Mutation:
    return Mutation(name, promise, file, find, replace, tuple(tests))


E2E_LINK = "tests/test_e2e_link.py"
DISCOVERY_E2E = f"{E2E_LINK}::test_discovery_refuses_web_pages_and_forged_requests"
RELAY_E2E = f"{E2E_LINK}::test_relay_handshake_rejects_bad_token_version_origin_and_silence"
OTHER_USER = "tests/test_hardening.py::test_another_local_user_gets_neither_the_token_nor_the_link"
LOOPBACK = "tests/test_hardening.py::test_every_listener_binds_loopback_only"
EXT_POLICY_E2E = "tests/test_e2e_browser_tools.py::test_policy_is_checked_by_the_server_and_again_by_the_extension"
CLOSED_SHADOW_E2E = "tests/test_e2e_browser_tools.py::test_frames_in_closed_shadow_roots_are_refused"
PAIRING_E2E = "tests/test_e2e_pairing.py::test_another_users_server_is_shown_never_obeyed"
WSURL_UNIT = "tests/test_pairing.py::test_the_extension_sends_its_hello_only_to_a_loopback_socket"
FLOW = "tests/test_provider_flow.py"
MCP_HTTP_UNIT = "tests/test_mcp_http.py::test_what_gets_in_and_what_does_not"
MCP_HTTP_E2E = "tests/test_mcp_protocol.py::test_clients_of_both_eras_share_one_server_over_http_behind_its_door"
POOL = "tests/test_provider_pool.py"

MUTATIONS: tuple[Mutation, ...] = (
    # --- docs/security.md, "Checks": every listener, discovery, the relay --------------------------------------------
    m("discovery-binds-every-interface", "every listener binds 127.0.0.1 only",
      "actors/discovery.py", 'sock.bind(("127.0.0.1", port))', 'sock.bind(("0.0.0.0", port))',
      LOOPBACK),
    m("relay-binds-every-interface", "every listener binds 127.0.0.1 only",
      "actors/relay/actor.py", 'await sock.bind(("127.0.0.1", port))', 'await sock.bind(("0.0.0.0", port))',
      LOOPBACK),
    m("discovery-any-host", "discovery answers only Host 127.0.0.1:<port> or localhost:<port> (DNS rebinding)",
      "actors/discovery.py", 'if headers.get(b"host") not in self.hosts:', "if False:",
      DISCOVERY_E2E),
    m("discovery-any-origin", "discovery answers no web page's Origin",
      "actors/discovery.py", "if origin is not None and origin != SHARED.extension_origin.encode():", "if False:",
      DISCOVERY_E2E),
    m("discovery-any-fetch-site", "discovery answers only Sec-Fetch-Site absent or none",
      "actors/discovery.py", 'if headers.get(b"sec-fetch-site", b"none") != b"none":', "if False:",
      DISCOVERY_E2E),
    m("discovery-cors-header", "discovery never sends a CORS header",
      "actors/discovery.py", 'head.append(b"Cache-Control: no-store")',
      'head.append(b"Cache-Control: no-store")\n            head.append(b"Access-Control-Allow-Origin: *")',
      DISCOVERY_E2E),
    m("discovery-other-users", "discovery and the relay accept only their own user's processes (peer uid, at accept)",
      "supervisor/peergate.py", "            if not allowed:", "            if False:",
      OTHER_USER),
    m("relay-other-users", "the relay accepts only its own user's processes (peer uid)",
      "actors/relay/actor.py", "if not isinstance(remote, str) and not isinstance(local, str) and not same_user(",
      "if False and not same_user(",
      # Behind the accept gate an e2e peer never reaches it: the unit test fakes the uid check.
      "tests/test_relay_wire.py::test_a_websocket_from_another_users_process_is_refused_before_its_request_is_read",
      OTHER_USER),
    m("page-script-host-suffix", "the page script judges *.example.com as the extension does (not notexample.com)",
      "actors/browser_tools/page_tree.js", "host.endsWith(p.slice(1))", "host.endsWith(p.slice(2))",
      "tests/test_browser_tools_units.py::test_the_page_script_judges_urls_as_the_extension_and_the_server_do"),
    # MCP over HTTP (serve --http-port): the door in front of the SDK.
    m("mcp-http-binds-every-interface", "every listener binds 127.0.0.1 only",
      "actors/mcp_front/http.py", 'sock.bind(("127.0.0.1", port))', 'sock.bind(("0.0.0.0", port))', MCP_HTTP_E2E),
    m("mcp-http-any-origin", "MCP over HTTP refuses every request with an Origin (web pages)",
      "actors/mcp_front/http.py", '    if _header(scope, b"origin"):', "    if False:", MCP_HTTP_UNIT),
    m("mcp-http-any-host", "MCP over HTTP answers only Host 127.0.0.1:<port> or localhost:<port> (DNS rebinding)",
      "actors/mcp_front/http.py", "    if len(hosts) != 1 or hosts[0] not in", "    if False and hosts[0] not in",
      MCP_HTTP_UNIT),
    m("mcp-http-no-token", "MCP over HTTP needs the bearer token",
      "actors/mcp_front/http.py", "if len(auth) != 1 or not hmac.compare_digest(auth[0], want):", "if False:",
      MCP_HTTP_UNIT),
    m("mcp-http-other-users", "MCP over HTTP serves only its own user's processes (peer uid)",
      "actors/mcp_front/http.py", "if PEER_UID_AVAILABLE and uid != os.getuid():", "if False:", MCP_HTTP_UNIT),
    m("relay-any-origin", "the relay upgrade needs Origin chrome-extension://<our id>",
      "actors/relay/actor.py", "        if origin != self.origin:", "        if False:",
      RELAY_E2E),
    m("relay-any-token", "the hello must carry the per-boot token",
      "actors/relay/wire.py",
      'if not isinstance(given, str) or not given.isascii() or not hmac.compare_digest(given.encode("ascii"),',
      'if isinstance(given, bool) and not hmac.compare_digest(str(given).encode("ascii"),',
      "tests/test_relay_wire.py::test_a_bad_hello_is_a_refusal_with_its_close_code", RELAY_E2E),
    m("relay-any-version", "the hello must speak protocol version 1",
      "actors/relay/wire.py", 'if hello.get("protocolVersion") != version:', "if False:",
      "tests/test_relay_wire.py::test_a_bad_hello_is_a_refusal_with_its_close_code", RELAY_E2E),
    m("relay-waits-for-hello", "the hello must come within 5 s",
      "actors/relay/actor.py", "HELLO_TIMEOUT_S = 5.0", "HELLO_TIMEOUT_S = 60.0",
      "tests/test_relay_wire.py::test_a_client_silent_for_5_s_after_the_upgrade_is_closed_with_4408"),
    m("relay-any-nonce", "a hello's nonce is 32-128 lowercase hex digits",
      "actors/relay/wire.py",
      "if nonce is not None and (not isinstance(nonce, str) or not pairing.NONCE.fullmatch(nonce)):", "if False:",
      "tests/test_pairing.py::test_any_nonce_is_accepted_or_refused_as_a_bad_hello"),
    m("relay-logs-the-token", "the token is never logged",
      "actors/relay/actor.py",
      'log.info("extension connected (link %s, extension %s)", conn.id, hello.extension_version)',
      'log.info("extension connected (link %s, extension %s, token %s)", conn.id, hello.extension_version, '
      "self.token)",
      RELAY_E2E),
    m("state-files-readable", "the pairing key and the state files are 0600",
      "supervisor/files.py", "PRIVATE_FILE = 0o600", "PRIVATE_FILE = 0o644",
      "tests/test_pairing.py::test_key_is_made_once_private_and_stable",
      "tests/test_hardening.py::test_state_dir_and_files_are_private"),
    # --- docs/security.md: the extension ----------------------------------------------------------------------------
    m("extension-any-wsurl", "the extension connects only to loopback ws:// URLs",
      "extension/discovery.js", "if (url.protocol !== 'ws:' || !LOOPBACK_HOSTS.has(url.hostname)) return",
      "if (false) return",
      WSURL_UNIT),
    m("extension-unpaired-connects", "an unpaired server is listed, never connected to",
      "extension/discovery.js", "      if (key === null) {", "      if (false) {",
      WSURL_UNIT),
    m("extension-skips-the-proof", "nothing is obeyed before the welcome's proof is checked",
      "extension/connection.js", "    if (!ok) {", "    if (false) {",
      PAIRING_E2E),
    m("extension-navigate-anywhere", "the extension checks a general command's navigation target",
      "extension/executor.js",
      "if (method === 'Page.navigate' && !urlAllowed(policy, cdpParams.url)) throw denied('navigation target', "
      "cdpParams.url);", "",
      EXT_POLICY_E2E),
    m("extension-reads-denied-tabs", "the extension checks the tab's current URL before every general command",
      "extension/executor.js",
      "if (!LEAVING_METHODS.has(method) && !urlAllowed(policy, lease.url)) throw denied(`tab ${tabId}`, lease.url);",
      "",
      EXT_POLICY_E2E),
    m("extension-attaches-denied-tabs", "the extension refuses to attach the tools to a tab on a denied URL",
      "extension/commands.js", "      if (!urlAllowed(policy, url)) throw denied(`tab ${tabId}`, url);", "",
      EXT_POLICY_E2E),
    m("extension-any-cdp-method", "a smaller CDP method allowlist for the general tools",
      "extension/commands.js", "if (!(policy ? GENERAL_CDP_METHODS : CDP_METHODS).has(method)) {", "if (false) {",
      EXT_POLICY_E2E),
    m("extension-lets-denied-documents-load", "held tabs' document requests to denied hosts are blocked",
      "extension/executor.js", "    if (mainFrame && !urlAllowed(lease.policy, url)) {", "    if (false) {",
      EXT_POLICY_E2E),
    m("extension-tools-drive-ask-tabs", "provider tabs are refused to the general tools",
      "extension/executor.js", "    if (lease && lease.kind !== kind) {", "    if (false) {",
      EXT_POLICY_E2E),
    m("shot-census-ignores-frame-sessions", "a screenshot is refused while a frame sits in a closed shadow root",
      "extension/executor.js",
      "    if (session !== null || lease.children.size > 0 || lease.unseenTargets) return true;",
      "    if (session !== null) return true;", CLOSED_SHADOW_E2E),
    m("shot-census-ignores-frame-tree", "a screenshot is refused while a frame sits in a closed shadow root",
      "extension/executor.js", "      return !root || (root.childFrames?.length ?? 0) > 0;", "      return !root;",
      CLOSED_SHADOW_E2E),
    m("extension-policy-subdomains", "the extension's policy matches *.example.com as a subdomain, not a suffix",
      "extension/policy.js", "host.endsWith(`.${base}`)", "host.endsWith(base)",
      "tests/test_browser_tools_units.py::test_extension_policy_agrees_with_the_server"),
    # --- docs/security.md: the general browser tools on the server -----------------------------------------------
    m("tools-safe-mode-off", "safe mode: interaction and navigation need --enable-mutations",
      "actors/browser_tools/policy.py", "if cap is Capability.MUTATE and not self.mutations:", "if False:",
      "tests/test_browser_tools_units.py::test_safe_mode_refuses_with_the_flag"),
    m("tools-eval-on", "eval needs --unsafe-enable-eval",
      "actors/browser_tools/policy.py", "if cap is Capability.EVAL and not self.eval:", "if False:",
      "tests/test_browser_tools_units.py::test_safe_mode_refuses_with_the_flag"),
    m("tools-policy-subdomains", "*.example.com is that host and its subdomains, not every name ending so",
      "actors/browser_tools/policy.py", "if host == p[2:] or host.endswith(p[1:]):",
      "if host == p[2:] or host.endswith(p[2:]):",
      "tests/test_browser_tools_units.py::test_policy_matches_urls"),
    m("tools-read-document-unchecked", "every page-script read is checked against the policy by its document's URL",
      "actors/browser_tools/page.py",
      '        self.policy.check_document(url, origin if isinstance(origin, str) else "", f"tab {self.tab.tab_id}")',
      "        pass",
      "tests/test_browser_tools_gaps.py::test_the_server_checks_the_document_each_read_came_from"),
    m("tools-shot-document-unchecked", "a screenshot is checked against the policy by its document's URL",
      "actors/browser_tools/reading.py", '        page.op_reply(results[0], "mask")\n', "",
      "tests/test_browser_tools_gaps.py::test_a_screenshot_of_a_document_outside_the_policy_is_refused"),
    m("tools-network-secrets-shown", "network_log stores credential headers as [redacted]",
      "actors/browser_tools/redact.py", "    if secret_name(name):\n        return REDACTED",
      "    if False:\n        return REDACTED",
      "tests/test_e2e_browser_tools_gaps.py::"
      "test_the_network_log_runs_from_the_lease_with_headers_redacted_and_bodies_on_request"),
    # --- docs/security.md, "Files an ask sends" ------------------------------------------------------------------
    m("files-outside-the-project", "every file must lie inside the project folder",
      "supervisor/project_walk.py", "        if not inside(real, rules.base):", "        if False:",
      "tests/test_attachments.py::test_links_out_of_the_project_and_the_state_dir_are_refused"),
    m("files-from-the-state-dir", "no file from the state dir (the pairing key) is ever sent",
      "supervisor/project_walk.py", "        if rules.state is not None and inside(real, rules.state):",
      "        if False:",
      "tests/test_attachments.py::test_links_out_of_the_project_and_the_state_dir_are_refused"),
    m("files-hidden-picked", "a link to a hidden file or folder is refused unless the pattern names it",
      "supervisor/project_walk.py", 'return all(not part.startswith(".") or part in named for part in rel.parts)',
      "return True",
      "tests/test_hostile_files.py::test_a_plain_named_link_to_a_hidden_file_is_refused"),
    m("folder-takes-hidden", "a folder skips hidden files (.env, .git) unless the pattern names them",
      "supervisor/project_walk.py",
      'child = f"{rel}/{e.name}" if rel else e.name\n            if e.name.startswith(".")',
      'child = f"{rel}/{e.name}" if rel else e.name\n            if False and e.name.startswith(".")',
      "tests/test_attachments.py::test_paths_globs_folders_and_exclusions"),
    m("glob-takes-hidden", "a glob skips hidden files (.env, .git) unless the pattern names them",
      "supervisor/project_walk.py", '        for e in self.listing(rel):\n            if e.name.startswith(".")',
      '        for e in self.listing(rel):\n            if False and e.name.startswith(".")',
      "tests/test_attachments.py::test_paths_globs_folders_and_exclusions"),
    m("files-dotdot", "file patterns never leave the project with '..'",
      "supervisor/attachments.py", '    if ".." in p.parts:', "    if False:",
      "tests/test_attachments.py::test_patterns_that_leave_the_project_or_find_nothing_are_refused"),
    # --- asks: the question is sent once, and never after a refusal (README, docs/troubleshooting.md) ----------------
    m("resend-on-retry", "a retry never sends the question twice (the audit's first mutation)",
      "actors/provider/flow.py", "question_shown(self.question, st.last_user) if self.reattach is None",
      "False if self.reattach is None",
      f"{FLOW}::test_a_retry_reads_the_answer_of_a_question_already_in_the_conversation",
      f"{FLOW}::test_a_retry_waits_for_slow_turns_instead_of_resending",
      "tests/test_e2e_providers.py::test_stuck_then_retry_reads_the_answer_without_sending_again"),
    m("resend-into-unknown-conversation", "a question sent where no conversation URL showed is not sent again",
      "actors/provider/flow.py",
      "if self.budget.attempt > 1 and self.memo.sent and not self.conversation(self.memo.url):", "if False:",
      f"{FLOW}::test_a_retry_never_resends_when_the_first_conversation_is_unknown"),
    # --- issue 40: a bot check is never typed into; one site failing still returns the others ------------------------
    m("type-into-a-bot-check", "a bot check in the site's place ends the ask at once: nothing is typed or sent",
      "actors/provider/flow.py", "        if st.challenge and not st.input_found:\n", "        if False:\n",
      "tests/test_sites.py::test_a_bot_check_is_site_challenge_at_once_and_nothing_is_typed"),
    m("one-site-fails-all", "ask_web: a site that fails still returns the other sites' answers",
      "actors/mcp_front/tools/asks.py",
      "                results[provider] = exc.info()  # one failing still returns the others' answers\n",
      "                raise\n",
      "tests/test_e2e_sites.py::test_three_sites_answer_in_markdown_keep_their_conversations_and_fail_typed"),
    # --- issue 34: a choice the page does not confirm is never sent --------------------------------------------------
    m("send-unverified-choice", "a model, effort or tool the page does not show chosen is never sent",
      "actors/provider/choices.py", "    missing = _unconfirmed(page.t, want, got)\n", "    missing = []\n",
      "tests/test_e2e_choices.py::test_chatgpt_models_effort_and_tools_in_both_pickers",
      "tests/test_e2e_choices.py::test_gemini_models_extended_thinking_and_tools"),
    # --- issue 37: never a partial answer as ok -----------------------------------------------------------------------
    m("answer-first-part-only", "the answer is every content part of the new message, in order",
      "actors/provider/structure.js", "      if (outer.length) return outer;",
      "      if (outer.length) return outer.slice(0, 1);",
      "tests/test_drift.py::test_an_ask_on_a_redesigned_page_is_whole_or_a_typed_error"),
    m("short-answer-ok", "an answer shorter than what the page showed is never ok",
      "actors/provider/drift.py", "    return shown >= MIN_SOLID and solid_len(answer) < WHOLE * shown",
      "    return False",
      f"{FLOW}::test_an_answer_shorter_than_the_page_showed_is_read_again_by_the_whole_turn",
      f"{FLOW}::test_an_answer_still_short_is_never_ok"),
    m("read-ahead-of-a-changed-page", "a read ahead is the answer only while it still describes the page",
      "actors/provider/answer_read.py",
      "if st.read is not None and st.read.text.strip() and st.visible and not st.thinking_done:",
      "if st.read is not None and st.read.text.strip():",
      f"{FLOW}::test_the_completing_states_read_ahead_is_the_answer_unless_the_page_must_change_first"),
    m("send-despite-refused-file", "a file the site refuses ends the ask before the question is sent",
      "actors/provider/attach.py", "        if notices := [t for t in now.refused if t not in before.refused]:\n",
      "        if notices := [t for t in now.refused if t not in before.refused]:\n"
      "            return trio.current_time() - t0\n",
      "tests/test_e2e_files.py::test_each_refusal_is_a_typed_error_naming_the_file_and_nothing_is_sent"),
    # --- the browser ai-bridge launches (README, "Which browser") ---------------------------------------------------
    m("browser-forked-from-a-worker-thread", "the launched browser lives as long as we do, however idle",
      "actors/browser/ours.py", "proc, write_fd, read_fd = process.spawn(path, args, log_fd, tied=tied)",
      "proc, write_fd, read_fd = await trio.to_thread.run_sync(\n"
      "                lambda: process.spawn(path, args, log_fd, tied=tied))",
      "tests/test_e2e_link.py::test_launched_browser_outlives_an_idle_worker_thread"),
    m("keeperless-headed-browser", "a headed browser is the user's window: it outlives even our SIGKILL",
      "actors/browser/process.py", "            keeper = _spawn_keeper(to_child_w, from_child_r)",
      "            keeper = None",
      "tests/test_browser_launch.py::test_only_a_headed_browser_outlives_a_killed_server"),
    m("popup-wakes-nothing", "opening the extension's popup wakes a stopped worker at once (not at the next alarm)",
      "extension/popup.js", "chrome.runtime.sendMessage({ type: 'status' }).catch(() => {});", "",
      "tests/test_extension_idle.py::test_popup_wakes_a_stopped_worker_at_once"),
    # --- what the logs and errors promise (docs/install.md, docs/troubleshooting.md) ------------------------------
    m("log-holds-the-answer", "ai-bridge.log never holds questions or answers (docs/install.md)",
      "actors/provider/asking.py",
      "        return result_of(self.name, out, _timings(t0, flow.marks), budget.attempt - 1, tuple(warnings), "
      "memo.chosen,\n",
      '        self.log.info("%s answered %r", self.t.title, out.answer)\n'
      "        return result_of(self.name, out, _timings(t0, flow.marks), budget.attempt - 1, tuple(warnings), "
      "memo.chosen,\n",
      "tests/test_e2e_providers.py::test_chatgpt_new_chat_then_existing_chat"),
    m("log-holds-the-question", "ai-bridge.log never holds questions or answers (docs/install.md)",
      "actors/provider/asking.py",
      "        flow.mark(\"total\")\n",
      '        flow.mark("total")\n        self.log.info("%s was asked %r", self.t.title, msg.question[:60])\n',
      "tests/test_e2e_providers.py::test_chatgpt_new_chat_then_existing_chat"),
    m("tool-crash-escapes", "an unexpected failure in a tool call is internal_error; the session goes on",
      "actors/mcp_front/actor.py", '        log.exception("tool %s crashed", tool.name)\n', "        raise\n",
      "tests/test_toolkit.py::test_an_unexpected_failure_is_internal_error_and_the_next_call_is_served"),
    # --- the answer is the new turn, and a reattached job reads only its own (the audit's table) --------------------
    m("answer-counts-one-turn-short", "the answer is the new turn: turns are counted before sending",
      "actors/provider/flow.py", "initial_user, initial_assistant = st.user_count, st.assistant_count\n",
      "initial_user, initial_assistant = st.user_count, st.assistant_count - 1\n",
      f"{FLOW}::test_the_answer_is_the_turn_after_the_ones_counted_before_sending",
      "tests/test_e2e_providers.py::test_chatgpt_new_chat_then_existing_chat"),
    m("answer-reads-the-first-turn", "the answer is read from the last assistant turn",
      "actors/provider/watcher.js", "last: lastOf(msgs) || lastOf(turns)", "last: msgs[0] || lastOf(turns)",
      "tests/test_e2e_providers.py::test_chatgpt_new_chat_then_existing_chat"),
    m("bundle-drops-a-file", "a bundled repository holds every file once (docs/install.md, Files)",
      "supervisor/bundles.py", "    for item in texts:\n", "    for item in texts[:-1]:\n",
      "tests/test_bundles.py::test_every_text_file_once_within_the_limits",
      "tests/test_e2e_bundles.py::test_a_200_file_project_arrives_at_each_site_as_bundles_with_every_file_once"),
    m("saved-file-replaces-one", "an answer's file is saved under a free name, never over a file that is there",
      "supervisor/savefiles.py", "        if not candidate.exists():\n", "        if True:\n",
      "tests/test_files_back_units.py::test_a_saved_file_never_replaces_one",
      "tests/test_e2e_files_back.py::test_generated_images_and_sandbox_files_are_saved_and_linked"),
    m("files-back-from-any-host", "an answer's files are loaded only from the provider's own file hosts",
      "extension/policy.js", "return !!site && onHosts(httpsHost(url), site.fileHosts);",
      "return true || onHosts(httpsHost(url), site.fileHosts);",
      "tests/test_files_back_units.py::test_the_server_and_the_extension_allow_the_same_file_hosts"),
    m("frames-of-any-host", "a provider tab reads only the frames of its provider's own frame hosts",
      "extension/policy.js", "return !!site && onHosts(httpsHost(url), site.frameHosts);",
      "return true || onHosts(httpsHost(url), site.frameHosts);",
      "tests/test_research_frames.py::test_the_server_and_the_extension_allow_the_same_frame_hosts"),
    m("reattach-any-question", "a reattached job whose question is not the last one is interrupted",
      "actors/provider/flow.py", "else digest_shown(self.reattach, st.last_user))", "else True)",
      f"{FLOW}::test_a_reattached_job_reads_only_its_own_question"),
    # --- issue 38: asks side by side never meet in one conversation; a cancelled waiter sends nothing ---------------
    m("two-asks-one-conversation", "asks into one conversation run one after another, never in two tabs at once",
      "actors/provider/schedule.py", "        return a is not None and a == b\n", "        return False\n",
      f"{POOL}::test_asks_naming_one_conversation_take_turns_and_another_runs_beside_them"),
    m("follow-up-beside-its-new-chat", "a project's follow-up waits for the new chat its project is starting",
      "actors/provider/schedule.py",
      "        if then.lane.reads is not None and then.lane.reads in (first.lane.writes, first.lane.reads):",
      "        if False:",
      f"{POOL}::test_a_follow_up_waits_for_the_new_chat_its_project_is_starting"),
    m("cancelled-waiter-runs", "an ask cancelled while it waits for a tab leaves the line; nothing is sent",
      "actors/provider/asking.py", "            if not ticket.granted.is_set():\n",
      "            if not ticket.granted.is_set() and False:\n",
      f"{POOL}::test_beyond_the_cap_clients_take_turns_and_a_cancelled_waiter_touches_no_tab"),
)


# --- running ----------------------------------------------------------------------------------------------------------


class GateError(Exception):
    """The gate itself cannot run as written (a text to find is gone): fix the list, not the code."""


def check(mutations: Iterable[Mutation], root: Path = REPO) -> list[str]:
    """What is wrong with the list against the checkout at `root`: texts not found exactly once, tests whose file or
    function is gone, replacements that change nothing. Empty when all is well."""
    problems = []
    names = set()
    for mu in mutations:
        if mu.name in names:
            problems.append(f"{mu.name}: the name is used twice")
        names.add(mu.name)
        path = root / mu.file
        if not path.is_file():
            problems.append(f"{mu.name}: {mu.file} does not exist")
            continue
        n = path.read_text().count(mu.find)
        if n != 1:
            problems.append(f"{mu.name}: {mu.file} has the text to find {n} times (must be once): {mu.find!r}")
        if mu.find == mu.replace:
            problems.append(f"{mu.name}: the replacement changes nothing")
        if not mu.tests:
            problems.append(f"{mu.name}: no test guards it")
        for node in mu.tests:
            file, _, func = node.partition("::")
            func = func.split("[", 1)[0]
            if not (root / file).is_file():
                problems.append(f"{mu.name}: {file} does not exist")
            elif not re.search(rf"^(async )?def {re.escape(func)}\(", (root / file).read_text(), re.M):
                problems.append(f"{mu.name}: {file} has no test {func}")
    return problems


def checkout_files(root: Path) -> list[str]:
    """The checkout's files as git sees them (tracked, and untracked but not ignored); all files but caches and
    virtual environments without git."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root,
                             capture_output=True, check=True, timeout=60).stdout
        return [f for f in out.decode().split("\0") if f and (root / f).is_file()]
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        skip = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
                "node_modules"}
        return [str(p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and not skip & set(p.relative_to(root).parts)]


def scratch_copy(files: list[str], root: Path, dest: Path) -> None:
    """The files, with their modification times, and the checkout's bytecode beside them: valid where a source is
    unchanged (Python checks a source's time and size), so a run compiles only the mutated file. Without it each
    run compiled the whole tree and rewrote every test module first (~15 s of CPU per mutation)."""
    for f in files:
        target = dest / f
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / f, target)
    for folder in {Path(f).parent for f in files}:
        cache = root / folder / "__pycache__"
        if cache.is_dir():
            shutil.copytree(cache, dest / folder / "__pycache__", dirs_exist_ok=True)


def apply(mu: Mutation, copy: Path) -> None:
    path = copy / mu.file
    text = path.read_text()
    if text.count(mu.find) != 1:
        raise GateError(f"{mu.name}: {mu.file} has the text to find {text.count(mu.find)} times (must be once)")
    path.write_text(text.replace(mu.find, mu.replace))
    for stale in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):  # compiled from the unmutated text
        stale.unlink()


@dataclass
class Outcome:
    mutation: Mutation
    verdict: str  # "killed" | "survived" | "error"
    failed: list[str]
    counts: str  # pytest's summary line
    seconds: float
    output: str


def pytest_env(copy: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_AUTO_NUM_WORKERS")}
    env["PYTHONPATH"] = os.pathsep.join([str(copy), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


def run_pytest(tests: Iterable[str], cwd: Path, workers: int) -> tuple[int, str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEs", "--no-header", "-n",
           str(workers), *tests]
    done = subprocess.run(cmd, cwd=cwd, env=pytest_env(cwd), capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def summary_line(output: str) -> str:
    lines = [ln.strip("= ") for ln in output.splitlines() if re.search(r"\d+ (passed|failed|error|skipped)", ln)]
    return lines[-1] if lines else "(no summary)"


def run_one(mu: Mutation, files: list[str], keep: bool) -> Outcome:
    t0 = time.monotonic()
    copy = Path(tempfile.mkdtemp(prefix=f"ai-bridge-mutation-{mu.name}-"))
    try:
        scratch_copy(files, REPO, copy)
        apply(mu, copy)
        code, output = run_pytest(mu.tests, copy, 1)
    finally:
        if not keep:
            shutil.rmtree(copy, ignore_errors=True)
    failed = sorted({m.group(2) for m in re.finditer(r"^(FAILED|ERROR) (.+?)(?: - .*)?$", output, re.M)})
    verdict = {0: "survived", 1: "killed"}.get(code, "error")
    if verdict == "killed" and not failed:
        verdict = "error"
    return Outcome(mu, verdict, failed, summary_line(output), time.monotonic() - t0, output)


def expected_seconds(mu: Mutation) -> float:
    """The guards' last known wall time (tests/durations.json), to start the longest mutations first."""
    try:
        known = json.loads((REPO / "tests" / "durations.json").read_text())
    except (OSError, ValueError):
        return 0.0
    total = 0.0
    for node in mu.tests:
        for k, v in known.items():
            if k == node or (k.startswith(node + "[") and "[" not in node):
                total += float(v[0] if isinstance(v, list) else v)
    return total


def report(o: Outcome) -> str:
    by = f" by {', '.join(o.failed)}" if o.failed else ""
    line = f"{o.verdict.upper():8} {o.mutation.name:38} {o.seconds:6.1f} s  {o.counts}{by}"
    if o.verdict != "killed":
        line += f"\n         promise: {o.mutation.promise}\n         edit: {o.mutation.file}: " \
                f"{o.mutation.find.strip()[:100]!r} -> {o.mutation.replace.strip()[:100]!r}"
        if o.verdict == "error":
            line += "\n" + "\n".join("         | " + ln for ln in o.output.strip().splitlines()[-30:])
    return line


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("-k", dest="only", action="append", default=[], help="only mutations whose name contains this")
    p.add_argument("--jobs", type=int, default=(os.cpu_count() or 1) + 2, help="mutations run at once")
    p.add_argument("--list", action="store_true", help="print the mutations and their guards")
    p.add_argument("--check", action="store_true", help="only check the list against the checkout")
    p.add_argument("--baseline", action="store_true", help="first run every guard on the unmutated checkout")
    p.add_argument("--keep", action="store_true", help="keep the scratch copies (their paths are printed)")
    args = p.parse_args(argv)

    problems = check(MUTATIONS)
    if problems:
        print("mutation gate: the list no longer fits the code:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    chosen = [mu for mu in MUTATIONS if not args.only or any(k in mu.name for k in args.only)]
    if args.check:
        print(f"mutation gate: {len(MUTATIONS)} mutations, every text to find is there once")
        return 0
    if args.list:
        for mu in chosen:
            print(f"{mu.name}: {mu.promise}\n  {mu.file}: {mu.find.strip()!r}\n  -> {mu.replace.strip()!r}")
            for t in mu.tests:
                print(f"  guard: {t}")
        return 0
    if not chosen:
        print("mutation gate: no mutation matches", file=sys.stderr)
        return 2

    t0 = time.monotonic()
    if args.baseline:
        guards = sorted({t for mu in chosen for t in mu.tests})
        code, output = run_pytest(guards, REPO, args.jobs)
        print(f"baseline: {summary_line(output)} ({time.monotonic() - t0:.1f} s)", flush=True)
        if code != 0:
            print(output[-4000:], file=sys.stderr)
            print("mutation gate: the guards fail on the unmutated checkout; fix that first", file=sys.stderr)
            return 1
    files = checkout_files(REPO)
    print(f"mutation gate: {len(chosen)} mutations, {args.jobs} at a time", flush=True)
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, mu, files, args.keep) for mu in sorted(chosen, key=lambda mu:
                                                                                -expected_seconds(mu))]
        for fut in as_completed(futures):
            o = fut.result()
            with lock:
                outcomes.append(o)
                print(report(o), flush=True)
    took = time.monotonic() - t0
    survived = [o.mutation.name for o in outcomes if o.verdict == "survived"]
    errors = [o.mutation.name for o in outcomes if o.verdict == "error"]
    killed = len(outcomes) - len(survived) - len(errors)
    print(f"mutation gate: {killed} of {len(outcomes)} killed" + (f"; SURVIVED: {', '.join(survived)}" if survived
                                                                   else "")
          + (f"; ERROR: {', '.join(errors)}" if errors else "") + f"; total {took:.1f} s", flush=True)
    return 0 if not survived and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
