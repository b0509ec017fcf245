"""A small local web site for the general browser tools' tests, served over TLS under several host names: pages with
forms, same-origin iframes, open shadow DOM, a long page, pages that open tabs, redirects to a denied host, dialogs,
console and network activity, re-rendering content. See server.py for the routes and fixture.py for the client."""
