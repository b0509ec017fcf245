"""The ask tools: one site (ask_<site>_web), ChatGPT and Gemini at once (ask_chatgpt_gemini_web), or any set of
sites at once (ask_web), where one failing still returns the others; in the foreground with progress, or as a
background job. Every site's tool is the same handler over its `ProviderName`: a site adds its choice model here."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Literal

import attrs
import trio
from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from supervisor import attachments, bundles
from supervisor.errors import BridgeError, ErrorInfo, InvalidArgument
from supervisor.progress import pace
from supervisor.savefiles import answer_folder

from ...protocol.common import PAIR, ProviderName
from ...protocol.jobs import JOBS, JobView, StartJob
from ...protocol.provider import (
    MAX_ASK_TIMEOUT_S,
    SITE_TOOLS,
    Ask,
    AskProgress,
    AskResult,
    Choice,
    Target,
    default_timeout_s,
    provider_address,
    upload_limits,
)
from ...protocol.session_store import MAX_PROJECT
from ..deps import FrontDeps, ToolCall
from ..toolkit import Annotations, Args, Result, Tool
from .consent import confirm_costly, with_login
from .render import (
    MANY_SITES_TOOL,
    Answer,
    BothAnswers,
    DryRun,
    JobStarted,
    SitesAnswers,
    answer_result,
    progress_line,
    sites_result,
)

MAX_QUESTION = 100_000


class AskArgs(Args):
    question: Annotated[str, Field(
        min_length=1, max_length=MAX_QUESTION,
        description="The question, as you would type it into the chat. Include the context the other model needs "
        "(code, error messages); it sees only the files you send with `files`.")]
    new_chat: Annotated[bool, Field(
        description="Start a fresh conversation instead of continuing this project's one.")] = False
    # No schema default: an absent timeout_s means the server's response_timeout_s setting.
    timeout_s: Annotated[float, Field(
        ge=5, le=MAX_ASK_TIMEOUT_S,
        description="Give up after this many seconds: it bounds the whole call, retries included (default: the "
        "server's response_timeout_s setting, 480; 4200 for a Pro, Deep Think or Thinking model or mode, whose "
        "answers take up to an hour).")] | SkipJsonSchema[None] = None
    background: Annotated[bool, Field(
        description="Return at once with a job_id instead of waiting; then call get_answer (it can wait, and shows "
        "the partial answer meanwhile). Use it when your MCP client times out long calls or you want to work while "
        "the answer forms.")] = False
    project: Annotated[str, Field(
        min_length=1, max_length=MAX_PROJECT,
        description="The name this conversation is kept under (default: the server's --project, else your "
        "client's root folder, else the server's working directory). Calls with the same project continue the "
        "same conversation.")] | SkipJsonSchema[None] = None

    files: Annotated[list[Annotated[str, Field(min_length=1, max_length=1000)]], Field(
        min_length=1, max_length=attachments.MAX_PATTERNS,
        description="Project files to send with the question: paths and globs relative to the project folder (the "
        "server's working directory), e.g. [\"src/**/*.py\", \"!src/generated/**\", \"README.md\"]; a "
        "pattern starting with ! excludes. Only files inside the project (no .., no links out of it); at most "
        f"{bundles.MAX_BUNDLED_FILES} files and {attachments.MAX_TOTAL_BYTES // 2**20} MiB. A site takes "
        f"{attachments.MAX_FILES} files a message: more go as bundles (see bundle). When any file fails, nothing is "
        "sent.")] | SkipJsonSchema[None] = None
    attach: Annotated[Literal["upload", "inline"], Field(
        description="upload: through the site's own file upload, the question sent once each file shows as "
        "uploaded; inline: each file put into the prompt as a fenced block headed by its path.")] = "upload"
    bundle: Annotated[bool, Field(
        description="Pack the text files into bundles, each file headed by its path, so a whole repository fits "
        "the site's upload limit (binary files still go one per upload). true: always; false: never (over the "
        f"limit is an error). Unset: only when there are more files than the site takes ({attachments.MAX_FILES}). "
        "dry_run shows the plan.")] | SkipJsonSchema[None] = None
    save_to: Annotated[str, Field(
        min_length=1, max_length=1000,
        description="The folder the answer's generated images and files (ChatGPT's images and code-sandbox "
        "downloads, Gemini's images) are saved in, relative to the project folder; created if missing, never over "
        "a file that is there. Default: the server's <state-dir>/files. They come back as paths (files) and "
        "resource links.")] | SkipJsonSchema[None] = None
    dry_run: Annotated[bool, Field(
        description="Only show what would be sent (the question, the files with their sizes, the inline size, "
        "the bundle plan, a token estimate); opens no tab, sends nothing.")] = False
    temporary: Annotated[bool, Field(
        description="Ask in the site's temporary chat: the site keeps no history of it, and it does not become this "
        "project's conversation.")] = False

    @field_validator("question")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v.strip()

    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        """The model, effort and tools to choose, per provider (empty ones included)."""
        return ()

    def targets(self) -> tuple[tuple[ProviderName, Target], ...]:
        """Where the ask goes, per provider, when not the project's conversation (issue 38)."""
        return ()


_MODEL_TEXT = ("The model to choose in the site's own picker before asking, named as the site names it today (any "
               "case; the start of a name, a whole word or the page's id is enough; an exact name wins): {examples}. "
               "An unknown name is an error listing what the picker offers (`ai-bridge models` or the list_models "
               "tool show it); a choice the page does not confirm is an error too: nothing is sent either way. "
               "Applies to this ask's conversation; the result names the choice the page showed and the model that "
               "answered.")
_EFFORT_TEXT = "How hard the model thinks: {examples}. Checked like `model`."
_TOOLS_TEXT = ("The site's tools to switch on for this ask: {examples}. Deep Research runs 5-30 minutes and returns "
               "the whole report with its sources; its deadline and progress heartbeat follow.")


ChatGPTTool = Literal["deep research", "web search"]
GeminiTool = Literal["deep research", "deep think", "canvas"]
_CHATGPT_MODEL = Annotated[str, Field(min_length=1, max_length=100, description=_MODEL_TEXT.format(
    examples='"GPT-5.5", "GPT-5.6 Sol", "o3" (a model of the picker\'s model submenu), or a row of its main menu'))]
_CHATGPT_EFFORT = Annotated[str, Field(min_length=1, max_length=40, description=_EFFORT_TEXT.format(
    examples='"instant", "medium", "high", "extra high" or "pro" (the tiers the picker shows on your plan)'))]
_CHATGPT_TOOLS = Annotated[list[ChatGPTTool], Field(min_length=1, max_length=1, description=_TOOLS_TEXT.format(
    examples='"deep research" or "web search" (one at a time)'))]
_GEMINI_MODEL = Annotated[str, Field(min_length=1, max_length=100, description=_MODEL_TEXT.format(
    examples='"3.1 Pro", "Pro", "3.5 Flash", "Flash-Lite"'))]
_GEMINI_EFFORT = Annotated[str, Field(min_length=1, max_length=40, description=_EFFORT_TEXT.format(
    examples='"extended" (the picker\'s Extended thinking switch on) or "standard" (off)'))]
_GEMINI_TOOLS = Annotated[list[GeminiTool], Field(min_length=1, max_length=3, description=_TOOLS_TEXT.format(
    examples='"deep research", "deep think", "canvas"'))]
# Claude's picker (claude-2607-model-menu-open.html, tokenless's thinking-effort-menu-open capture): model rows, an
# Effort submenu and a Thinking switch. Grok's (grok-2607-model-menu-open.html): four models, no effort. Perplexity's
# "Choose a model" menu is not captured: its names are the page's.
_CLAUDE_MODEL = Annotated[str, Field(min_length=1, max_length=100, description=_MODEL_TEXT.format(
    examples='"Sonnet 5", "Opus 4.8", "Haiku 4.5"'))]
_CLAUDE_EFFORT = Annotated[str, Field(min_length=1, max_length=40, description=_EFFORT_TEXT.format(
    examples='"low", "medium", "high", "extra" or "max" (the Effort menu), "thinking" or "off" (the Thinking '
    'switch)'))]
_GROK_MODEL = Annotated[str, Field(min_length=1, max_length=100, description=_MODEL_TEXT.format(
    examples='"Fast", "Auto", "Expert", "Heavy"'))]
_PERPLEXITY_MODEL = Annotated[str, Field(min_length=1, max_length=100, description=_MODEL_TEXT.format(
    examples='"Best", "Sonar", or a model of its picker'))]
_LEGACY = SkipJsonSchema[Annotated[str, Field(min_length=1, max_length=100)] | None]


_URL = Annotated[str, Field(min_length=8, max_length=2000, pattern=r"^https://\S+$")]


class WhereArgs(Args):
    """Where on one site (issue 38): the provider actor checks each URL is that site's before anything is sent."""

    conversation_url: Annotated[_URL, Field(
        description="Continue this conversation instead of the project's: its URL as the browser shows it "
        "(https://chatgpt.com/c/…, https://gemini.google.com/app/…, or one inside a Project or Gem). The project's "
        "own conversation stays as it is.")] | SkipJsonSchema[None] = None
    chat_base_url: Annotated[_URL, Field(
        description="Start the new chat inside this ChatGPT Project (https://chatgpt.com/g/g-p-…/project) or Gemini "
        "Gem (https://gemini.google.com/gem/…): with new_chat, or when the project has no conversation yet.")] \
        | SkipJsonSchema[None] = None

    def target(self) -> Target:
        return Target(self.conversation_url or "", self.chat_base_url or "")


class ChatGPTChoice(WhereArgs):
    model: _CHATGPT_MODEL | SkipJsonSchema[None] = None
    effort: _CHATGPT_EFFORT | SkipJsonSchema[None] = None
    tools: _CHATGPT_TOOLS | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "", self.effort or "", tuple(dict.fromkeys(self.tools or ())))


class GeminiChoice(WhereArgs):
    model: _GEMINI_MODEL | SkipJsonSchema[None] = None
    effort: _GEMINI_EFFORT | SkipJsonSchema[None] = None
    tools: _GEMINI_TOOLS | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "", self.effort or "", tuple(dict.fromkeys(self.tools or ())))


class ClaudeChoice(Args):
    model: _CLAUDE_MODEL | SkipJsonSchema[None] = None
    effort: _CLAUDE_EFFORT | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "", self.effort or "")


class GrokChoice(Args):
    model: _GROK_MODEL | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "")


class PerplexityChoice(Args):
    model: _PERPLEXITY_MODEL | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "")


class ChatGPTAskArgs(AskArgs, ChatGPTChoice):
    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        return ((ProviderName.CHATGPT, self.choice()),)

    def targets(self) -> tuple[tuple[ProviderName, Target], ...]:
        return ((ProviderName.CHATGPT, self.target()),)


class GeminiAskArgs(AskArgs, GeminiChoice):
    mode: _LEGACY = None  # the name before issue 34: the same as model

    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        return ((ProviderName.GEMINI, attrs.evolve(self.choice(), model=self.model or self.mode or "")),)

    def targets(self) -> tuple[tuple[ProviderName, Target], ...]:
        return ((ProviderName.GEMINI, self.target()),)


class BothAskArgs(AskArgs):
    chatgpt: Annotated[ChatGPTChoice, Field(description="ChatGPT's model, effort and tools for this ask, and "
                                            "where it goes (conversation_url, chat_base_url).")] \
        | SkipJsonSchema[None] = None
    gemini: Annotated[GeminiChoice, Field(description="Gemini's model, effort and tools for this ask, and where it "
                                          "goes (conversation_url, chat_base_url).")] \
        | SkipJsonSchema[None] = None
    model: _LEGACY = None  # before issue 34: ChatGPT's model
    mode: _LEGACY = None  # before issue 34: Gemini's model

    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        gpt = self.chatgpt.choice() if self.chatgpt else Choice()
        gem = self.gemini.choice() if self.gemini else Choice()
        return ((ProviderName.CHATGPT, attrs.evolve(gpt, model=gpt.model or self.model or "")),
                (ProviderName.GEMINI, attrs.evolve(gem, model=gem.model or self.mode or "")))

    def targets(self) -> tuple[tuple[ProviderName, Target], ...]:
        return tuple((p, site.target()) for p, site in ((ProviderName.CHATGPT, self.chatgpt),
                                                         (ProviderName.GEMINI, self.gemini)) if site is not None)


class ClaudeAskArgs(AskArgs, ClaudeChoice):
    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        return ((ProviderName.CLAUDE, self.choice()),)


class GrokAskArgs(AskArgs, GrokChoice):
    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        return ((ProviderName.GROK, self.choice()),)


class PerplexityAskArgs(AskArgs, PerplexityChoice):
    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        return ((ProviderName.PERPLEXITY, self.choice()),)


SiteName = Literal["chatgpt", "gemini", "claude", "grok", "perplexity"]  # ProviderName's values (a test keeps them so)


class SiteChoiceArgs(Args):
    model: Annotated[str, Field(min_length=1, max_length=100, description=(
        "The model to choose in the site's picker, as the site names it (see the site's own ask tool, "
        "ask_<site>_web, or list_models)."))] | SkipJsonSchema[None] = None
    effort: Annotated[str, Field(min_length=1, max_length=40, description="How hard it thinks, as the site names "
                                 "it (ChatGPT, Gemini, Claude).")] | SkipJsonSchema[None] = None
    tools: Annotated[list[Annotated[str, Field(min_length=1, max_length=40)]], Field(
        min_length=1, max_length=3, description='The site\'s tools to switch on: ChatGPT "deep research", '
        '"web search"; Gemini "deep research", "deep think", "canvas".')] | SkipJsonSchema[None] = None

    def choice(self) -> Choice:
        return Choice(self.model or "", self.effort or "", tuple(dict.fromkeys(t.strip().lower()
                                                                              for t in self.tools or ())))


class SitesAskArgs(AskArgs):
    sites: Annotated[list[SiteName], Field(
        min_length=1, max_length=len(ProviderName),
        description="The sites to ask, all at once: any of chatgpt, gemini, claude, grok, perplexity (each once).")]
    # `choices` is the argument's name (AskArgs.choices is the method every ask tool has).
    choices_: Annotated[dict[SiteName, SiteChoiceArgs], Field(min_length=1)] | SkipJsonSchema[None] = Field(
        default=None, alias="choices", description="Per site asked: its model, effort and tools, e.g. "
        '{"claude": {"model": "Sonnet 5"}, "grok": {"model": "Expert"}}. Checked as by the site\'s own ask tool: '
        "a name the page does not offer, or a choice it does not confirm, is that site's error and nothing is "
        "sent there.")

    @field_validator("sites")
    @classmethod
    def _once_each(cls, v: list[SiteName]) -> list[SiteName]:
        if len(set(v)) != len(v):
            raise ValueError("names a site twice")
        return v

    def providers(self) -> tuple[ProviderName, ...]:
        asked = {ProviderName(s) for s in self.sites}
        return tuple(p for p in ProviderName if p in asked)

    def choices(self) -> tuple[tuple[ProviderName, Choice], ...]:
        given = {ProviderName(site): c.choice() for site, c in (self.choices_ or {}).items()}
        for p, c in given.items():
            if p not in self.providers():
                raise InvalidArgument(f"ask_web: choices name {p.value}, which is not among the sites asked",
                                      hint=f"Add {p.value!r} to sites, or leave its choices out.")
            if bad := [t for t in c.tools if t not in SITE_TOOLS.get(p, ())]:
                raise InvalidArgument(f"ask_web: {p.value} has no tool {bad[0]!r}",
                                      hint=f"{p.value} has: {', '.join(SITE_TOOLS.get(p, ())) or 'no tools'}.")
        return tuple((p, given.get(p, Choice())) for p in self.providers())


def project_folder() -> Path:
    """Where an ask's file paths are relative to: the server's working directory (an agent starts it in its
    project)."""
    return Path.cwd()


async def _files(deps: FrontDeps, args: AskArgs) -> tuple[attachments.ProjectFile, ...]:
    if not args.files:
        return ()
    # In a worker thread, within a budget: a large selection never holds up the other clients' calls.
    return await attachments.select_files_async(project_folder(), args.files, state_dir=deps.config.state_dir,
                                                max_files=bundles.max_selected(args.bundle))


async def _message(deps: FrontDeps, call: ToolCall, args: AskArgs, providers: tuple[ProviderName, ...]) -> Ask:
    # Pro / Deep Think / Thinking answers take up to an hour: their default deadline is long enough (issue 21).
    choices = args.choices()
    timeout_s = args.timeout_s if args.timeout_s is not None else default_timeout_s(
        deps.config.response_timeout_s, " ".join(c.words() for _, c in choices))
    files = await _files(deps, args)  # checked before anything is sent; a failing file refuses the ask
    # Inline, or copies of the bytes that were checked for the browser to upload (bundled past the site's limit).
    question, uploads = await bundles.prepare(args.question, files, attach=args.attach, bundle=args.bundle,
                                              limits=upload_limits(providers), state_dir=deps.config.state_dir)
    save_to = await trio.to_thread.run_sync(answer_folder, project_folder(), args.save_to, deps.config.state_dir)
    return Ask(question, await call.project(args.project), args.new_chat, timeout_s, uuid.uuid4().hex,
               files=uploads, choices=tuple((p, c) for p, c in choices if c),
               targets=tuple((p, t) for p, t in args.targets() if t), temporary=args.temporary, client=call.client(),
               save_to=save_to)


async def dry_run_result(deps: FrontDeps, args: AskArgs, providers: tuple[ProviderName, ...]) -> Result:
    """What the ask would send, without opening a tab or sending anything."""
    report = bundles.dry_run(args.question, await _files(deps, args), attach=args.attach, bundle=args.bundle,
                             limits=upload_limits(providers))
    chosen = {p.value: c.as_json() for p, c in args.choices() if c}
    if chosen:
        report["choices"] = chosen
    return Result(text=bundles.dry_run_text(report), structured={"dryRun": report})


class _ProgressPump:
    """Actor progress (sync callback, never blocks the actor) → MCP progress notifications (async)."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.send, self.recv = trio.open_memory_channel[AskProgress](256)

    def sink(self, item: object) -> None:
        if isinstance(item, AskProgress):
            try:
                self.send.send_nowait(item)
            except trio.WouldBlock:
                pass  # progress is advisory; never block an actor on a slow client

    async def run(self) -> None:
        """Each provider's changes once (a thinking page reports "thinking" again and again); a heartbeat with the
        elapsed time while a provider shows nothing new (Pro and Deep Think answers think for many minutes)."""
        def line(item: AskProgress) -> str:
            return progress_line(item.provider, item.phase, item.text, place=item.place)

        await pace(self.recv, self.call.progress, group=lambda i: i.provider, key=line, line=line, idle="working")


async def _ask(deps: FrontDeps, call: ToolCall, provider: ProviderName, msg: Ask,
               on_progress: Callable[[object], None]) -> AskResult:
    async def attempt(after_login: bool) -> AskResult:
        # One history entry per provider: the entry id is the ask id, and it must differ between the two (and from
        # the attempt before the user logged in).
        mine = attrs.evolve(msg, ask_id=f"{msg.ask_id}-{provider.value}{'-login' if after_login else ''}")
        return await deps.ctx.ref(provider_address(provider)).call(mine, timeout=mine.call_timeout_s,
                                                                   on_progress=on_progress)

    return await with_login(call, provider, attempt)


def starter(tool: str, providers: tuple[ProviderName, ...]) -> Callable[[FrontDeps, ToolCall, AskArgs],
                                                                       Awaitable[JobView]]:
    """How an ask tool starts its background job (background: true, or an MCP task)."""

    async def start_job(deps: FrontDeps, call: ToolCall, args: AskArgs) -> JobView:
        if args.dry_run:  # a preview sends nothing, so it is never a job (a task-augmented call must not send)
            raise InvalidArgument("dry_run is answered at once and cannot run as a background job or task",
                                  hint="Call it with dry_run: true as a plain call, without background or a task.")
        msg = await _message(deps, call, args, providers)
        return await deps.ctx.ref(JOBS).call(StartJob(tool, providers, msg), timeout=10)

    return start_job


def _started(view: JobView) -> Result:
    names = ", ".join(p.display for p in view.providers)
    text = (f"Started background job {view.job_id} ({names}). Call get_answer with job_id {view.job_id!r} to wait "
            "for the answer (wait_s up to 600).")
    return Result(text=text, structured={"jobId": view.job_id, "status": view.status.value})


StartJobFn = Callable[[FrontDeps, ToolCall, AskArgs], Awaitable[JobView]]


async def _answered_early(deps: FrontDeps, call: ToolCall, args: AskArgs, start_job: StartJobFn,
                          providers: tuple[ProviderName, ...]) -> Result | None:
    """What every ask tool does before it asks: a dry run is answered, a costly ask confirmed, a background ask
    started as a job. None: ask now."""
    if args.dry_run:
        return await dry_run_result(deps, args, providers)
    if deps.config.confirm_costly:
        await confirm_costly(call, args.choices())
    if args.background:
        return _started(await start_job(deps, call, args))
    return None


def ask_one(provider: ProviderName, start_job: StartJobFn) -> Callable[[FrontDeps, ToolCall, AskArgs],
                                                                       Awaitable[Result]]:
    async def handler(deps: FrontDeps, call: ToolCall, args: AskArgs) -> Result:
        if (early := await _answered_early(deps, call, args, start_job, (provider,))) is not None:
            return early
        msg = await _message(deps, call, args, (provider,))
        pump = _ProgressPump(call)
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump.run)
                try:
                    r = await _ask(deps, call, provider, msg, pump.sink)
                finally:
                    nursery.cancel_scope.cancel()
        finally:
            attachments.unstage(msg.files)  # the site has them (a few small removals: no thread needed)
        return answer_result(r)

    return handler


def ask_many(tool: str, sites: Callable[[AskArgs], tuple[ProviderName, ...]]
             ) -> tuple[Callable[[FrontDeps, ToolCall, AskArgs], Awaitable[Result]], StartJobFn]:
    """The handler and job starter of a tool that asks several sites at once: each site in parallel, one failing
    still returns the others' answers."""

    async def start_job(deps: FrontDeps, call: ToolCall, args: AskArgs) -> JobView:
        return await starter(tool, sites(args))(deps, call, args)

    async def handler(deps: FrontDeps, call: ToolCall, args: AskArgs) -> Result:
        if (early := await _answered_early(deps, call, args, start_job, sites(args))) is not None:
            return early
        msg = await _message(deps, call, args, sites(args))
        pump = _ProgressPump(call)
        results: dict[ProviderName, AskResult | ErrorInfo] = {}

        async def one(provider: ProviderName) -> None:
            try:
                results[provider] = await _ask(deps, call, provider, msg, pump.sink)
            except BridgeError as exc:
                results[provider] = exc.info()  # one failing still returns the others' answers

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pump.run)
                async with trio.open_nursery() as asks:
                    for p in sites(args):
                        asks.start_soon(one, p)
                nursery.cancel_scope.cancel()
        finally:
            attachments.unstage(msg.files)
        return sites_result(results)

    return handler, start_job


def _sites_of(args: AskArgs) -> tuple[ProviderName, ...]:
    return args.providers() if isinstance(args, SitesAskArgs) else PAIR


ask_both, _start_both = ask_many("ask_chatgpt_gemini_web", lambda args: PAIR)
ask_web, _start_web = ask_many(MANY_SITES_TOOL, _sites_of)


ASKS = Annotations(read_only=False, destructive=False, idempotent=False, open_world=True)
_START = {p: starter(f"ask_{p.value}_web", (p,)) for p in ProviderName}
_WHERE = {ProviderName.CHATGPT: "chatgpt.com", ProviderName.GEMINI: "gemini.google.com",
          ProviderName.CLAUDE: "claude.ai", ProviderName.GROK: "grok.com", ProviderName.PERPLEXITY: "perplexity.ai"}
_ARGS: dict[ProviderName, type[AskArgs]] = {
    ProviderName.CHATGPT: ChatGPTAskArgs, ProviderName.GEMINI: GeminiAskArgs, ProviderName.CLAUDE: ClaudeAskArgs,
    ProviderName.GROK: GrokAskArgs, ProviderName.PERPLEXITY: PerplexityAskArgs}
_NOTE = {ProviderName.CHATGPT: " Long answers can take minutes; progress is streamed.",
         ProviderName.PERPLEXITY: " Its answers carry their sources as links.",
         }


def _one_site_tool(p: ProviderName) -> Tool:
    pair = "for two opinions use ask_chatgpt_gemini_web" if p in PAIR else "for several sites at once use ask_web"
    return Tool(f"ask_{p.value}_web",
                f"Ask {p.display} through {_WHERE[p]} in the user's browser (no API key). Use when you want "
                f"{p.display} specifically; {pair}. Continues this project's conversation unless new_chat is true."
                + _NOTE.get(p, " Progress is streamed."),
                _ARGS[p], ask_one(p, _START[p]), ASKS, output=(Answer, JobStarted, DryRun), title=f"Ask {p.display}",
                start_job=_START[p])


# The one-site tools of the sites ask_web reaches anyway: listed on request (`serve --tools asks,sites`), since every
# listed tool's schema costs the agent's context (docs/tools.md#which-tools-are-listed).
ONE_SITE_TOOLS = tuple(f"ask_{p.value}_web" for p in ProviderName if p not in PAIR)

TOOLS = (
    Tool("ask_chatgpt_gemini_web",
         "Ask ChatGPT and Gemini the same question at once through their web UIs (recommended for a second "
         "opinion, design reviews, debugging help). Returns both answers; if one fails you still get the other "
         "plus the error. Continues this project's conversations unless new_chat is true. Streams progress.",
         BothAskArgs, ask_both, ASKS, output=(BothAnswers, JobStarted, DryRun), title="Ask ChatGPT and Gemini",
         start_job=_start_both),
    Tool(MANY_SITES_TOOL,
         "Ask any set of sites the same question at once through their web UIs in the user's browser: ChatGPT, "
         "Gemini, Claude, Grok, Perplexity (`sites`). Returns each site's answer; a site that fails still returns "
         "the others plus its error. Continues this project's conversations unless new_chat is true.",
         SitesAskArgs, ask_web, ASKS, output=(SitesAnswers, JobStarted, DryRun), title="Ask several sites",
         start_job=_start_web),
    *(_one_site_tool(p) for p in ProviderName),
)
