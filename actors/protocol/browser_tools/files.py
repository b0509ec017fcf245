"""The browser tools' file requests: upload files into a file input, download a file the page offers."""

from __future__ import annotations

import attrs

from supervisor.otp import Request

from .values import ElementBrief, Target


@attrs.frozen
class UploadedFile:
    path: str  # as the caller named it, relative to the project folder
    size: int

    def as_json(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size}


@attrs.frozen
class UploadReport:
    tab_id: int
    url: str
    element: ElementBrief | None
    files: tuple[UploadedFile, ...]

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "element": self.element.as_json() if self.element else None,
                "files": [f.as_json() for f in self.files]}


@attrs.frozen
class UploadFile(Request[UploadReport]):
    """Set a file input's files: `paths` are absolute, resolved and already checked to be the project's
    (supervisor.attachments.select_files, as an ask's files); `names` are how the caller named them."""

    target: Target
    paths: tuple[str, ...]
    names: tuple[str, ...]
    sizes: tuple[int, ...]
    timeout_s: float = 5.0
    tab_id: int | None = None


@attrs.frozen
class DownloadReport:
    tab_id: int
    url: str  # the tab's
    source_url: str  # what was downloaded
    path: str  # the saved file: absolute, inside the download folder
    name: str
    size: int  # bytes
    mime_type: str

    def as_json(self) -> dict[str, object]:
        return {"tabId": self.tab_id, "url": self.url, "sourceUrl": self.source_url, "path": self.path,
                "name": self.name, "size": self.size, "mimeType": self.mime_type}


@attrs.frozen
class Download(Request[DownloadReport]):
    """Save what clicking `target` downloads, or what `url` downloads (a link the page script clicks, so the page's
    cookies go with it), into the configured download folder."""

    target: Target | None = None
    url: str | None = None
    timeout_s: float = 30.0
    tab_id: int | None = None
