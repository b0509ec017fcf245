"""``ai-bridge check``: the seed's scenario suite (section 10) against the real, logged-in sites.

`scenarios` (the file format, its validation and the question rule), `relevance` (the documented scoring rule),
`run` (the command: the probe first, then the scenarios through the same actors as ``serve``) and `report` (the
summary table and the JSON and markdown reports). The shipped scenarios are ``scenarios.json`` beside them.
"""
