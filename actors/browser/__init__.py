"""The browser room: `actor` is the lifecycle (ensure by mode: wait for the user's Chrome, wake, attach, launch; the
state), built on `links` (the link and which browser holds it) and `ours` (the actor's state and the browser it
launched: start, life, worker wakes, pairing, close); `users_chrome` records when the user's Chrome was seen;
`process` is the browser as a process (executables, command line, profile owner, why it died), `pipe` the
browser-level CDP channel to a browser we launched, `downloads` a download caught over that pipe."""

from .actor import run
from .process import browser_version, find_browser

__all__ = ["browser_version", "find_browser", "run"]
