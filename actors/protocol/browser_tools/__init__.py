"""browser_tools: the general browser tools (seeds 002 and 003) — tabs, navigation, interaction, reading — on tabs of
their own, behind safe mode and a default-deny domain policy.

Every page request names its tab (`tab_id`) or acts on the current one (the last `TabNew` / `TabSelect`). Every
element-taking request takes a `Target`: exactly one of a CSS selector or a snapshot ref. Replies are plain values
with an ``as_json()``: the stable object the MCP tools return as structured content.

One protocol, in rooms by tool family: `values` (what they share), `tabs` (tabs and navigation), `interaction`,
`reading`, `devtools` (console, network, emulation, eval, dialogs), `files` (upload, download). This face holds the
actor's own status, the union of its requests and its address, and re-exports every name: import from here.
"""

from __future__ import annotations

import attrs

from supervisor.otp import Address, Request

from .devtools import (
    ColorScheme,
    ConsoleEntry,
    ConsoleLogs,
    ConsoleReport,
    DialogInfo,
    DialogReport,
    DialogType,
    Emulate,
    EmulateReport,
    Emulation,
    Eval,
    EvalReport,
    HandleDialog,
    NetworkBody,
    NetworkEntry,
    NetworkLog,
    NetworkPreset,
    NetworkReport,
    Resize,
    Viewport,
)
from .files import Download, DownloadReport, UploadedFile, UploadFile, UploadReport
from .interaction import (
    Action,
    ActionReport,
    Click,
    Drag,
    FieldResult,
    FieldValue,
    FillForm,
    FillReport,
    Hover,
    MouseButton,
    Press,
    Scroll,
    ScrollReport,
    ScrollTo,
    SelectOption,
    TypeText,
)
from .reading import (
    Box,
    ElementInfo,
    ElementState,
    ElementWaitState,
    ExtractLinks,
    FormField,
    GetText,
    ImageFormat,
    Link,
    LinksReport,
    PageMetadata,
    Query,
    QueryReport,
    QueryWhat,
    Screenshot,
    ScreenshotReport,
    ShotMode,
    Snapshot,
    SnapshotReport,
    TextKind,
    TextReport,
    Visibility,
    WaitFor,
    WaitReport,
)
from .tabs import (
    ClosedReport,
    History,
    HistoryStep,
    Navigate,
    NavReport,
    TabClose,
    TabNew,
    TabSelect,
    TabsList,
    TabsReport,
)
from .values import ElementBrief, TabOwner, TabView, Target, WaitUntil

# The actor's own status.

@attrs.frozen
class ToolTabState:
    tab_id: int
    url: str
    owner: TabOwner
    attached: bool
    dialog: DialogInfo | None
    console_entries: int | None  # None until console_logs was first used on the tab
    network_entries: int | None

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "owner": self.owner.value, "attached": self.attached,
                "dialog": self.dialog.as_json() if self.dialog else None, "consoleEntries": self.console_entries,
                "networkEntries": self.network_entries}


@attrs.frozen
class ToolsReport:
    mutations: bool
    eval: bool
    allowed_domains: tuple[str, ...]
    current_tab_id: int | None
    tabs: tuple[ToolTabState, ...]

    def as_json(self) -> dict[str, object]:
        return {"safeMode": not self.mutations, "mutations": self.mutations, "eval": self.eval,
                "allowedDomains": list(self.allowed_domains), "currentTabId": self.current_tab_id,
                "tabs": [t.as_json() for t in self.tabs]}


@attrs.frozen
class ToolsStatus(Request[ToolsReport]):
    pass


BrowserToolsRequest = (TabsList | TabNew | TabSelect | TabClose | Navigate | History | Click | Hover | TypeText
                       | Press | Scroll | SelectOption | Drag | FillForm | Snapshot | Screenshot | GetText
                       | ExtractLinks | Query | WaitFor | ConsoleLogs | NetworkLog | Eval | HandleDialog | ToolsStatus
                       | Emulate | Resize | UploadFile | Download)
BROWSER_TOOLS = Address[BrowserToolsRequest]("browser_tools", BrowserToolsRequest)

__all__ = [
    "BROWSER_TOOLS", "Action", "ActionReport", "Box", "BrowserToolsRequest", "Click", "ClosedReport", "ColorScheme",
    "ConsoleEntry", "ConsoleLogs", "ConsoleReport", "DialogInfo", "DialogReport", "DialogType", "Download",
    "DownloadReport", "Drag", "ElementBrief", "ElementInfo", "ElementState", "ElementWaitState", "Emulate",
    "EmulateReport", "Emulation", "Eval", "EvalReport", "ExtractLinks", "FieldResult", "FieldValue", "FillForm",
    "FillReport", "FormField", "GetText", "HandleDialog", "History", "HistoryStep", "Hover", "ImageFormat", "Link",
    "LinksReport", "MouseButton", "NavReport", "Navigate", "NetworkBody", "NetworkEntry", "NetworkLog",
    "NetworkPreset", "NetworkReport", "PageMetadata", "Press", "Query", "QueryReport", "QueryWhat", "Resize",
    "Screenshot", "ScreenshotReport", "Scroll", "ScrollReport", "ScrollTo", "SelectOption", "ShotMode", "Snapshot",
    "SnapshotReport", "TabClose", "TabNew", "TabOwner", "TabSelect", "TabView", "TabsList", "TabsReport", "Target",
    "TextKind", "TextReport", "ToolTabState", "ToolsReport", "ToolsStatus", "TypeText", "UploadFile",
    "UploadReport", "UploadedFile", "Viewport", "Visibility", "WaitFor", "WaitReport", "WaitUntil",
]
