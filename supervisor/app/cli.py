"""``ai-bridge`` command line. Heavy imports (the MCP SDK, hypercorn) happen only inside the commands that need them."""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

from actors.protocol.common import SITE_CHOICES

from .. import __version__
from ..constants import SHARED

PORT_RANGE = f"{SHARED.discovery_ports.start}-{SHARED.discovery_ports.stop - 1}"
RAW_HELP = ("print the answers as the page gave them, control characters included, for piping (by default escape "
            "sequences and other control characters are shown escaped, so a page cannot write to your terminal)")

DESCRIPTION = """\
ai-bridge lets coding agents (Claude Code, Codex, Cursor, ...) ask ChatGPT, Gemini, Claude, Grok and Perplexity
through their web UIs in your own logged-in browser, through a Chrome extension. No API keys.

Typical use: register `ai-bridge serve` as an MCP server in your agent; check the set-up with `ai-bridge doctor`.
"""


QUIET_COMMANDS = ("ask", "doctor", "check", "demo")  # their own output is the report: logging defaults to warning
DEBUG_HELP = "on an error, also print its traceback (without it: one line naming the error and its fix)"


DEMO_QUESTION = "How do I read files asynchronously in Python?"
DEMO_DESCRIPTION = """\
Ask ChatGPT and Gemini once, end to end, on the imitations of chatgpt.com and gemini.google.com that come with
ai-bridge: the question is typed into each page, the answers stream back and print on stdout, the progress on
stderr. No network, no account, nothing to set up but a Chromium or Chrome (found on PATH, or --browser-path).

It keeps to itself, without root: a temporary state dir (sessions, history, log and a pairing key of its own,
removed at the end); a headless Chromium of its own on a temporary profile, whose host rules send chatgpt.com and
gemini.google.com to the imitations on 127.0.0.1 and every other host nowhere. Its extension obeys only this run's
server (paired with the run's own key): your other ai-bridge servers and your own Chrome are left alone. It needs
one free discovery port in {ports}. Exit 0 when at least one provider answered.
"""


def _common(p: argparse.ArgumentParser, *, quiet: bool = False, debug_help: str = DEBUG_HELP) -> None:
    g = p.add_argument_group("state and logging")
    g.add_argument("--state-dir", help="sessions, history, logs, browser profile "
                   "(default $XDG_STATE_HOME/ai-bridge or ~/.local/state/ai-bridge; env AI_BRIDGE_STATE_DIR)")
    g.add_argument("--config", type=Path, help="TOML config file; one named here must exist (default "
                   "$XDG_CONFIG_HOME/ai-bridge/config.toml, if it exists)")
    g.add_argument("--providers", dest="providers_file", type=Path, metavar="FILE",
                   help="selectors and labels to prepend to the provider tables; one named here must exist "
                   "(default $XDG_CONFIG_HOME/ai-bridge/providers.toml, if it exists; docs/providers.md)")
    g.add_argument("--log-level", choices=["debug", "info", "warning", "error"],
                   help="default warning: this command's own output is the report" if quiet else "default info")
    g.add_argument("--debug", action="store_true", help=debug_help)
    g.add_argument("-v", "--verbose", action="count", default=0, help="debug logging (-vv: libraries too)")
    g.add_argument("--project", help="project name for sessions (default: the MCP client's root or the cwd)")
    g.add_argument("--private-text", action="store_true", default=None,
                   help="keep question and answer text out of history.jsonl and debug dumps (their sizes stay; "
                   "env AI_BRIDGE_PRIVATE_TEXT)")
    a = p.add_argument_group("asks side by side (issue 38)")
    a.add_argument("--tabs-per-site", type=int, metavar="N",
                   help="run up to N asks to one site at once, each in a tab of its own (default 3; 1 asks one at a "
                   "time; env AI_BRIDGE_TABS_PER_SITE)")
    a.add_argument("--tab-idle-s", type=float, metavar="SECONDS",
                   help="close a pooled tab idle this long; the kept conversation's tab stays (default 300; env "
                   "AI_BRIDGE_TAB_IDLE_S)")
    a.add_argument("--chat-base-url", dest="chat_base_urls", action="append", default=[], metavar="URL",
                   help="start new chats inside this ChatGPT Project (https://chatgpt.com/g/g-p-…/project) or "
                   "Gemini Gem (https://gemini.google.com/gem/…); one per site, repeatable (env "
                   "AI_BRIDGE_CHAT_BASE_URLS)")
    b = p.add_argument_group("browser")
    b.add_argument("--browser", choices=["auto", "connect", "launch"],
                   help="auto (default): use your Chrome when its extension connects, else launch one; "
                   "connect: only your own Chrome; launch: always a dedicated browser")
    b.add_argument("--browser-path", help="Chrome/Chromium executable (env AI_BRIDGE_BROWSER_PATH; default: PATH)")
    b.add_argument("--channel", choices=["stable", "beta", "dev", "canary"],
                   help="launch this Google Chrome channel, with a profile of its own "
                   "(<state-dir>/chrome-profile-<channel>)")
    b.add_argument("--profile-dir", help="profile of the launched browser (default <state-dir>/chrome-profile)")
    b.add_argument("--isolated", action="store_true", default=None, help="launch with a temporary profile")
    b.add_argument("--headless", action="store_true", default=None, help="launch the browser headless")
    b.add_argument("--browser-arg", dest="browser_args", action="append", default=[], metavar="ARG",
                   help="extra argument for the launched browser, verbatim (repeatable; "
                   "write --browser-arg=--flag=value)")
    b.add_argument("--load-extension", dest="load_extensions", action="append", default=[], metavar="PATH",
                   help="also load this unpacked extension of yours into the launched browser (repeatable)")
    b.add_argument("--close-browser", action="store_true", default=None,
                   help="on exit also close a headed browser we launched (headless ones always close)")
    b.add_argument("--discovery-port", type=int, help=f"pin the discovery port, one of {PORT_RANGE} (the ports the "
                   "extension polls; default: the first free one)")
    b.add_argument("--relay-port", type=int, help="pin the relay's WebSocket port, for an SSH forward to a Chrome "
                   "on another machine (docs/remote.md; default: any free port; env AI_BRIDGE_RELAY_PORT)")


def _seconds(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ai-bridge", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"ai-bridge {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("serve", help="run the MCP server on stdio (what your agent starts)",
                       description="Run the MCP server on stdin/stdout. stdout carries only MCP JSON-RPC; logs go "
                       "to stderr and <state-dir>/ai-bridge.log. Stops cleanly on stdin EOF, SIGTERM or SIGINT. With "
                       "--http-port, MCP is served over HTTP on loopback to many clients at once instead.")
    _common(s)
    s.add_argument("--allow-faults", action="store_true", default=None,
                   help="enable the console's fault helpers: crash/hang/slow an actor's next message, drop the "
                   "extension socket (for testing recovery; env AI_BRIDGE_ALLOW_FAULTS)")
    s.add_argument("--jobs-keep-days", type=float, metavar="DAYS",
                   help="keep background jobs' records (and answers) this many days: a restarted server knows them "
                   "(default 7; env AI_BRIDGE_JOBS_KEEP_DAYS)")
    s.add_argument("--tools", dest="listed_tools", action="append", default=[], metavar="SET",
                   help="which tools to list: asks (the ask, job and status tools, list_models, take_cdp_snapshot, "
                   "get_page_dom), sites (ask_claude_web, ask_grok_web, ask_perplexity_web: ask_web reaches those "
                   "sites too), browser (the general browser tools, and bridge_status), all; comma-separated or "
                   "repeated (default: asks, plus browser when --allow-domain is given; env AI_BRIDGE_TOOLS)")
    s.add_argument("--http-port", type=int, metavar="PORT",
                   help="serve MCP over Streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio, so several "
                   "agents share one server, browser and tab pool; clients send 'Authorization: Bearer TOKEN' "
                   "(`ai-bridge pair --mcp-token` prints it); runs until SIGINT/SIGTERM (env AI_BRIDGE_HTTP_PORT; "
                   "docs/install.md)")
    s.add_argument("--confirm-costly", action="store_true", default=None,
                   help="before a Pro, Deep Think or Deep Research ask, ask the user through the MCP client "
                   "(elicitation) and send it only if they accept; clients that cannot ask get it sent as before "
                   "(env AI_BRIDGE_CONFIRM_COSTLY)")
    t = s.add_argument_group("general browser tools (safe mode and domain policy; see docs/tools.md)")
    t.add_argument("--enable-mutations", action="store_true", default=None,
                   help="allow the interaction and navigation tools (click, type, navigate, tab_new, ...); "
                   "without it only read-only tools run (env AI_BRIDGE_ENABLE_MUTATIONS)")
    t.add_argument("--unsafe-enable-eval", action="store_true", default=None,
                   help="allow the eval tool: JavaScript of the agent's choosing in allowed pages "
                   "(env AI_BRIDGE_UNSAFE_ENABLE_EVAL)")
    t.add_argument("--allow-domain", dest="allowed_domains", action="append", default=[], metavar="PATTERN",
                   help="a host the browser tools may touch: example.com, *.example.com (it and its subdomains) or "
                   "* (all); repeatable; default none (env AI_BRIDGE_ALLOWED_DOMAINS, comma-separated)")
    t.add_argument("--network-secrets", action="store_true", default=None,
                   help="network_log shows credential headers (Authorization, API and CSRF tokens, ...) instead of "
                   "[redacted]; cookies never show, Chrome reports headers without them (env "
                   "AI_BRIDGE_NETWORK_SECRETS)")
    t.add_argument("--download-dir", metavar="DIR", default=None,
                   help="the folder the download tool saves into, never outside it; without it the tool is "
                   "refused (env AI_BRIDGE_DOWNLOAD_DIR)")

    a = sub.add_parser("ask", help="ask ChatGPT, Gemini, Claude, Grok or Perplexity from the terminal (progress on "
                       "stderr)",
                       description="Ask through the browser, as the MCP tools do, and print the answer on stdout.")
    _common(a, quiet=True)
    a.add_argument("--provider", choices=SITE_CHOICES, default="both",
                   help="which site to ask: one site, both (ChatGPT and Gemini, the default) or all (every site); "
                   "several sites are asked in parallel")
    a.add_argument("--new-chat", action="store_true", help="start a fresh conversation")
    a.add_argument("--timeout", type=_seconds, help="seconds the whole ask may take, retries included (default: the "
                   "response_timeout_s setting, 480)")
    a.add_argument("--json", action="store_true", help="print the structured result as JSON")
    a.add_argument("--raw", action="store_true", help=RAW_HELP)
    a.add_argument("--file", action="append", default=[], dest="files", metavar="PATTERN",
                   help="a project file to send with the question: a path or glob relative to the working directory "
                   "('src/**/*.py'); a pattern starting with ! excludes ('!src/gen/**'); repeatable")
    a.add_argument("--attach", choices=["upload", "inline"], default="upload",
                   help="upload: through the site's own file upload (default); inline: in the prompt, each file as "
                   "a fenced block headed by its path")
    a.add_argument("--save-to", metavar="DIR",
                   help="the folder the answer's generated images and files are saved in (created if missing; never "
                   "over a file that is there). Default: <state-dir>/files")
    a.add_argument("--bundle", action=argparse.BooleanOptionalAction, default=None,
                   help="pack the text files into bundles (each file headed by its path) so a whole repository fits "
                   "the site's upload limit; binary files still go one per upload. Default: only when there are "
                   "more files than the site takes with one message (10); --no-bundle: never")
    a.add_argument("--dry-run", action="store_true",
                   help="print what would be sent (question, files and sizes, inline size, the bundle plan, token "
                   "estimate); opens no browser, sends nothing")
    a.add_argument("--model", action="append", default=[], dest="models", metavar="[SITE:]NAME",
                   help="the model to choose in the site's own picker, as the site names it (any case; the start of a "
                   "name or a whole word is enough): ChatGPT 'GPT-5.5', 'o3'; Gemini '3.1 Pro', 'Flash'; Claude "
                   "'Sonnet 5'; Grok 'Expert'; Perplexity 'Sonar'. 'chatgpt:GPT-5.5' names one site (with several "
                   "sites asked). A name the page does not offer, or a "
                   "choice it does not confirm, is an error and nothing is sent; `ai-bridge models` lists the names")
    a.add_argument("--mode", action="append", default=[], dest="modes", metavar="NAME", help=argparse.SUPPRESS)
    a.add_argument("--effort", action="append", default=[], dest="efforts", metavar="[SITE:]TIER",
                   help="how hard it thinks: ChatGPT 'instant', 'medium', 'high', 'extra high', 'pro' (the tiers "
                   "your plan shows); Gemini 'extended' (Extended thinking) or 'standard'; Claude 'low' ... 'max' "
                   "(its Effort menu), 'thinking' or 'off' (its Thinking switch)")
    a.add_argument("--tool", action="append", default=[], dest="tools", metavar="[SITE:]TOOL",
                   help="switch on a site tool: 'deep research' (ChatGPT, Gemini: 5-30 minutes, the whole report "
                   "with its sources), 'web search' (ChatGPT), 'deep think', 'canvas' (Gemini); repeatable")
    a.add_argument("--conversation-url", action="append", default=[], dest="conversation_urls", metavar="URL",
                   help="continue this conversation (its URL as the browser shows it) instead of the project's; each "
                   "URL goes to the site it belongs to (one per site, repeatable); the project's own conversation "
                   "stays as it is")
    a.add_argument("--temporary", action="store_true",
                   help="ask in the site's temporary chat: the site keeps no history of it, and it does not become "
                   "the project's conversation")
    a.add_argument("question", help="the question (use - to read it from stdin)")

    m = sub.add_parser("models", help="list what each site's pickers offer now: models, efforts, tools",
                       description="Opens each provider page in the browser ai-bridge uses (any --browser mode), opens "
                       "its model picker (with its submenus) and its tools menu, reads them and closes them: "
                       "nothing is chosen, typed or sent. Prints the site's own names (pass them as --model, "
                       "--effort, --tool) with the current choice marked. Exit 0 if a site could be read.")
    _common(m)
    m.add_argument("--provider", choices=SITE_CHOICES, default="both",
                   help="which site: one, both (ChatGPT and Gemini, the default) or all; in parallel")
    m.add_argument("--timeout", type=_seconds, default=60.0, help="seconds each site may take (default 60)")
    m.add_argument("--json", action="store_true", help="print the offers as JSON")

    dm = sub.add_parser("demo", help="ask the built-in imitations of ChatGPT and Gemini: no network, no account",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description=DEMO_DESCRIPTION.format(ports=PORT_RANGE))
    dm.add_argument("question", nargs="?", default=DEMO_QUESTION, help=f"what to ask (default: {DEMO_QUESTION!r})")
    dm.add_argument("--browser-path", help="Chrome/Chromium executable (env AI_BRIDGE_BROWSER_PATH; default: PATH)")
    dm.add_argument("--timeout", type=_seconds, default=120.0, help="seconds the ask may take (default 120)")
    dm.add_argument("--config", type=Path, help="TOML config file, for browser_path (default as for serve)")
    dm.add_argument("--log-level", choices=["debug", "info", "warning", "error"], help="default warning")
    dm.add_argument("-v", "--verbose", action="count", default=0, help="debug logging (-vv: libraries too)")
    dm.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    d = sub.add_parser("doctor", help="launch headless Chromium with the extension and check every link",
                       description="Checks: browser found, discovery guarded, extension connected, relay round "
                       "trip, debugger attach on the self-test page. Uses a temporary profile. Exit 0 = all pass. "
                       "With --live: the no-send health probe of the provider pages in your browser instead. "
                       "With --page: the same probe, and the answer an ask would read, on a page you saved.")
    _common(d, quiet=True)
    d.add_argument("--live", action="store_true",
                   help="open each provider page in the browser ai-bridge uses (any --browser mode) and check every "
                   "selector and label of its table; types and sends nothing. Exit 0 only when nothing required "
                   "is missing and every provider is signed in")
    d.add_argument("--page", dest="pages", action="append", default=[], type=Path, metavar="FILE",
                   help="probe this saved page (an .html file, or an element's outerHTML) offline, and show the "
                   "answer an ask would read from it (repeatable; docs/providers.md says how to save one)")
    d.add_argument("--provider", choices=SITE_CHOICES, default=None,
                   help="with --live: which site to probe: one, both (ChatGPT and Gemini, the default) or all, in "
                   "parallel; with --page: whose page it is (default: told by the page)")
    d.add_argument("--timeout", type=_seconds, default=None,
                   help="with --live or --page: seconds each probe may take (default 60)")
    d.add_argument("--json", action="store_true", help="with --live or --page: print the reports as JSON")

    k = sub.add_parser("check", help="run the scenario suite against the real sites (probe first; exit 0 = all pass)",
                       description="Probe each provider page (nothing sent), then ask the scenarios' questions through "
                       "the browser (any --browser mode) under the project 'ai-bridge-check', judge their assertions, "
                       "print a progress line per scenario and a summary, and write a JSON and a markdown report to "
                       "<state-dir>/reports/. Exit 0 only when every selected scenario passed; 2 for invalid "
                       "scenarios or options. See docs/check.md.")
    _common(k, quiet=True, debug_help="print each ask's phases and the probe's whole table, keep whole answers and a "
            "page snapshot of every scenario in the reports; on an error, also print its traceback")
    k.add_argument("--scenarios", dest="scenario_files", action="append", default=[], type=Path, metavar="FILE",
                   help="also load the scenarios of this JSON file (repeatable; after the shipped ones)")
    k.add_argument("--list", dest="list_only", action="store_true",
                   help="list the selected scenarios and exit (no browser)")
    k.add_argument("--dry-run", action="store_true",
                   help="validate the scenario files and show the run order of the selection; no browser")
    k.add_argument("--id", dest="ids", action="append", default=[], metavar="ID",
                   help="run this scenario (repeatable; default: all)")
    k.add_argument("--tag", dest="tags", action="append", default=[], metavar="TAG",
                   help="run only scenarios with this tag (repeatable: every tag given; smoke, regression, chatgpt, "
                   "gemini, claude, grok, perplexity, thinking, parallel, code)")
    k.add_argument("--provider", choices=SITE_CHOICES, default="both",
                   help="run only the scenarios of these sites: one site, both (ChatGPT and Gemini, the default) or "
                   "all (every site)")

    c = sub.add_parser("console", help="live inspection of a running server (actor tree, tasks, faults)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Attach a Python REPL to a running `ai-bridge serve`. What you type runs inside "
                       "the server's own trio loop\n(top-level `await` works); the server keeps running when you "
                       "leave (Ctrl-D, exit).\n\nHelpers: tree(), tasks(), relay(), tabs(), history(n), jobs(), "
                       "restart('actor'), help();\nwith `serve --allow-faults` also crash/hang/slow('actor') and "
                       "drop_extension().\n\nServers register in <state-dir>/servers/<pid>.json; with one running "
                       "no option is needed.")
    c.add_argument("--state-dir", help="the server's state dir (default as for serve)")
    c.add_argument("--pid", type=int, help="which server, when several run on the state dir")
    c.add_argument("--socket", type=Path, help="connect to this console socket directly")
    c.add_argument("-c", dest="commands", action="append", default=[], metavar="CODE",
                   help="run this code and exit instead of the interactive REPL (repeatable)")
    c.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    pr = sub.add_parser("pair", help="print the code that pairs your own Chrome's extension with your servers",
                        description="Print the pairing code of the state dir's key (made on first use) on stdout, "
                        "with what to do on stderr. Paste it into the extension's popup: the extension then obeys "
                        "the servers of this state dir, and no server of another user. A browser ai-bridge launches "
                        "is paired over its private pipe: this is for your own Chrome (--browser connect/auto). "
                        "The code is as private as the key file: do not share it.")
    pr.add_argument("--state-dir", help="the servers' state dir (default as for serve)")
    pr.add_argument("--config", type=Path, help="TOML config file (default as for serve)")
    pr.add_argument("--mcp-token", action="store_true",
                    help="print instead the bearer token MCP clients send to `serve --http-port` (derived from the "
                    "same key; as private as it)")
    pr.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    j = sub.add_parser("jobs", help="list the background jobs and get their answers, from their records",
                       description="The background jobs (asks with background: true, MCP tasks) of the state dir, "
                       "read from their records in <state-dir>/jobs, whether a server runs or not. A job whose "
                       "server stopped is reattached by the next `ai-bridge serve`. `ai-bridge jobs get JOB_ID` "
                       "prints its answer (exit 0), its error (exit 1), or its partial answer while it runs "
                       "(exit 3).")
    j.add_argument("--state-dir", help="the servers' state dir (default as for serve)")
    j.add_argument("--config", type=Path, help="TOML config file (default as for serve)")
    j.add_argument("--jobs-keep-days", type=float, metavar="DAYS", help="list the jobs of this many days (default "
                   "the jobs_keep_days setting, 7)")
    j.add_argument("--json", action="store_true", help="print JSON")
    j.add_argument("--raw", action="store_true", help=RAW_HELP)
    j.add_argument("action", nargs="?", choices=["list", "get"], default="list",
                   help="list (the default) the jobs, or get one job's answer, error or partial answer")
    j.add_argument("job_id", nargs="?", metavar="JOB_ID", help="with get: the job")
    j.add_argument("--wait", type=_seconds, metavar="S",
                   help="with get: wait up to S seconds for a running job to end, while a server runs it (default: "
                   "look once)")
    j.add_argument("--debug", action="store_true", help=DEBUG_HELP)

    e = sub.add_parser("extension", help="write the Chrome extension as a zip file to carry to your Chrome",
                       description="Write the bundled Chrome extension as a zip (one folder inside) to load in a "
                       "Chrome on this or another machine: unzip it, then in chrome://extensions turn on Developer "
                       "mode, 'Load unpacked' and pick the folder. Without --zip: print the extension's folder.")
    e.add_argument("--zip", dest="zip_path", type=Path, metavar="PATH",
                   help="write the zip here (replaced if it exists); its path is printed on stdout")
    sub.add_parser("extension-path", help="print the folder of the Chrome extension to 'Load unpacked'",
                   description="Print the folder of the bundled Chrome extension. In chrome://extensions turn on "
                   "Developer mode, choose 'Load unpacked' and pick this folder.")
    return p


CONFIG_KEYS = ("state_dir", "log_level", "discovery_port", "browser", "browser_path", "channel", "profile_dir",
               "isolated", "headless", "browser_args", "load_extensions", "close_browser", "project", "allow_faults",
               "private_text", "enable_mutations", "unsafe_enable_eval", "allowed_domains", "providers_file",
               "jobs_keep_days", "network_secrets", "download_dir", "relay_port",
               "confirm_costly", "http_port")


def _config(args: argparse.Namespace) -> Any:
    from .. import config as cfg

    cli = {k: getattr(args, k, None) for k in CONFIG_KEYS}
    cli["tools"] = getattr(args, "listed_tools", None)  # serve's --tools (ask's --tool is a site tool)
    explicit: Path | None = getattr(args, "config", None)
    if explicit is not None and not explicit.is_file():
        from ..errors import ConfigError

        raise ConfigError(f"option --config: {explicit} does not exist (or is not a file)")
    defaults = {"log_level": "warning"} if args.command in QUIET_COMMANDS else None
    return cfg.load(cli, config_file=explicit, defaults=defaults)


def _pair(state_dir: Path, *, token: bool = False) -> int:
    from ..errors import StateFileError
    from ..files import ensure_private_dir
    from ..pairing import load_or_create

    try:
        ensure_private_dir(state_dir)
        key = load_or_create(state_dir)
    except (StateFileError, OSError) as exc:
        print(f"ai-bridge: cannot read or make the pairing key: {exc}", file=sys.stderr)
        return 1
    if token:
        print(key.mcp_token, flush=True)
        print(f"The bearer token of `ai-bridge serve --http-port` on state dir {state_dir}: clients send "
              "'Authorization: Bearer <it>'. Keep it private.", file=sys.stderr)
        return 0
    print(f"Pairing code of the ai-bridge servers on state dir {state_dir}, key fingerprint {key.fingerprint}:",
          file=sys.stderr, flush=True)
    print(key.code, flush=True)
    print("Open the ai-bridge extension's popup in your Chrome (its toolbar icon), paste the code and press Pair.\n"
          "Keep it private: whoever holds it can pose as your ai-bridge to that browser.", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command is None:
        parser().print_help(sys.stderr)
        return 2
    from .failure import run_command

    return run_command(lambda: _command(args), debug=getattr(args, "debug", False))


def _command(args: argparse.Namespace) -> int:
    if args.command == "extension-path" or (args.command == "extension" and args.zip_path is None):
        from ..paths import extension_path

        print(extension_path())
        return 0
    if args.command == "extension":
        from .extension_zip import zip_main

        return zip_main(args.zip_path)

    from ..errors import ConfigError, StateDirRefused, StateFileError
    from ..files import ensure_private_dir, writable

    try:
        config = _config(args)
        if args.command != "console":
            from .providers import provider_tables

            provider_tables(config)  # a bad providers.toml stops the start here, one line per problem
    except ConfigError as exc:
        for line in str(exc).splitlines():
            print(f"ai-bridge: {line}", file=sys.stderr)
        return 2

    if args.command in ("jobs", "ask", "console") and isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")  # text from pages and records: a lone surrogate is no crash
    if args.command == "demo":  # its own temporary state dir: nothing of the user's state is touched
        from .demo import run_demo

        return run_demo(config, args.question, args.timeout, verbose=args.verbose)

    if args.command == "console":  # a client: no logging set-up, no log file of its own
        from .console_client import console_main

        return console_main(config.state_dir, pid=args.pid, socket_path=args.socket, commands=args.commands)

    if args.command == "pair":
        return _pair(config.state_dir, token=args.mcp_token)

    if args.command == "jobs":
        from . import jobs_cli

        if args.action == "get":
            if not args.job_id:
                print("ai-bridge jobs get: name the job: ai-bridge jobs get JOB_ID", file=sys.stderr)
                return 2
            return jobs_cli.get_main(config.state_dir, args.job_id, args.wait or 0.0, args.json, raw=args.raw)
        return jobs_cli.list_main(config.state_dir, config.jobs_keep_days, args.json, raw=args.raw)

    import trio

    from .. import logs

    log_file: Path | None = config.log_file
    try:
        ensure_private_dir(config.state_dir)  # 0700 and ours; another user's state dir is refused outright
        if not writable(config.state_dir):
            raise StateFileError(f"state dir {config.state_dir} is not writable")
    except StateDirRefused as exc:
        print(f"ai-bridge: {exc}", file=sys.stderr)
        return 1
    except StateFileError as exc:
        log_file = None  # unwritable: run without sessions, history and log file (each says so once)
        print(f"ai-bridge: warning: {exc.message}; running without sessions, history or a log file",
              file=sys.stderr)
    logs.setup(config.log_level, log_file, verbose=args.verbose)
    if args.command == "serve":
        from .serve import serve

        code = trio.run(serve, config)
        # Everything is stopped and written: leave now. The interpreter's teardown of the SDK's and pydantic's
        # modules took 1.5-3.7 s on a loaded 2-core machine, and an agent waits for the exit.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if args.command == "doctor" and args.pages:
        if args.live or args.provider in ("both", "all"):
            print("ai-bridge doctor: --page goes without --live, and with --provider naming one site",
                  file=sys.stderr)
            return 2
        from .saved_page import page_main

        return trio.run(page_main, config, args.pages, args.provider, args.timeout or 60.0, args.json)
    if args.command == "models":
        from .models import models_main

        return trio.run(models_main, config, args.provider, args.timeout, args.json)
    if args.command == "doctor" and args.live:
        from .doctor import live_main

        return trio.run(live_main, config, args.provider or "both", args.timeout or 60.0, args.json)
    if args.command == "doctor":
        if args.json or args.timeout is not None or args.provider is not None:
            print("ai-bridge doctor: --json, --timeout and --provider go with --live or --page", file=sys.stderr)
            return 2
        from .doctor import doctor_main

        return trio.run(doctor_main, config)
    if args.command == "check":
        from .check.outcome import Options
        from .check.run import check_main

        opts = Options(tuple(args.scenario_files), tuple(args.ids), tuple(args.tags), args.list_only, args.dry_run,
                       args.debug, args.provider)
        return trio.run(check_main, config, opts)
    if args.command == "ask":
        from .ask import AskExtras, ask_main

        question = sys.stdin.read() if args.question == "-" else args.question
        # --mode (before issue 34, Gemini's model) is --model gemini:NAME
        models = (*args.models, *(f"gemini:{m}" for m in args.modes))
        extras = AskExtras(tuple(args.files), args.attach, args.dry_run, models, tuple(args.efforts), tuple(args.tools),
                           args.raw, args.bundle, args.save_to, tuple(args.conversation_urls), args.temporary)
        return trio.run(ask_main, config, question, args.provider, args.new_chat, args.timeout, args.json, extras)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
