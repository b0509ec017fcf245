"""Every actor's protocol, one module per actor: the closed set of frozen request classes it accepts (each naming
its reply type), the typed replies, and its `Address`. Actors import these modules and the OTP core, never each
other: the folder tree of `actors/` is the actor tree.
"""
