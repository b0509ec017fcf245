"""What network_log never keeps (issue 36): credentials, recognised by the *names* they travel under, since no list of
header names is ever complete (x-goog-api-key, ocp-apim-subscription-key, x-access-token, private tokens, session
ids, refresh tokens ... all escaped a fixed list).

- A header is a credential when its name (any case) contains one of `SECRET_WORDS` (``token``, ``key``, ``secret``,
  ``auth`` ...): its value is stored as ``[redacted]``.
- A URL query parameter is one when its name contains one of them too, or is one of `SECRET_PARAMS` (``sig``,
  ``code`` ...): its value is replaced in the entry's URL and in any header value that is a URL (Referer, Location).
  A password in a URL's user info is replaced as well.
- With ``--network-secrets`` (the user's choice) nothing is replaced.

docs/security.md lists the same words; tests/test_hostile_browser_tools.py checks that the two agree.
"""

from __future__ import annotations

from urllib.parse import unquote_plus, urlsplit, urlunsplit

REDACTED = "[redacted]"
# Parts of header and query parameter names that mark a credential (compared in lower case).
SECRET_WORDS = ("auth", "cookie", "credential", "csrf", "jwt", "key", "passw", "secret", "session", "signature",
                "token", "xsrf")
# Query parameter names that are credentials though they hold none of the words (compared in lower case).
SECRET_PARAMS = frozenset({"code", "pass", "pwd", "sid", "sig", "ticket"})


def secret_name(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in SECRET_WORDS)


def secret_param(name: str) -> bool:
    low = unquote_plus(name).lower().strip()
    return low in SECRET_PARAMS or any(w in low for w in SECRET_WORDS)


def url(text: str) -> str:
    """`text` with the values of its credential query parameters and its user info's password replaced."""
    if "?" not in text and "@" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        if ":" in userinfo:
            netloc = f"{userinfo.split(':', 1)[0]}:{REDACTED}@{host}"
    query = parts.query
    if query:
        pieces = []
        for piece in query.split("&"):
            name, eq, _ = piece.partition("=")
            pieces.append(f"{name}={REDACTED}" if eq and secret_param(name) else piece)
        query = "&".join(pieces)
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def header(name: str, value: str) -> str:
    """The value a header is kept with."""
    if secret_name(name):
        return REDACTED
    if value.startswith(("http://", "https://", "/")):  # Referer, Location, Content-Location, Link targets
        return url(value)
    return value
