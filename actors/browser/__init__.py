"""The browser room: `actor` is the lifecycle (launch, attach, wake, recover), `process` the browser as a process
(executables, command line, profile owner, why it died), `pipe` the browser-level CDP channel to a browser we
launched."""

from .actor import run
from .process import browser_version, find_browser

__all__ = ["browser_version", "find_browser", "run"]
