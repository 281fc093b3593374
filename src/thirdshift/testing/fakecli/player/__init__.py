"""The fake ``claude`` and ``codex`` programs: they play one scripted call each.

This package runs inside the fake CLI's own process, on every call, so it imports only what a
call needs, and nothing of pytest or of ``thirdshift`` itself. The shims run it by path
(see :mod:`thirdshift.testing.fakecli.__main__`), where it is imported as the top-level package
``player``: its modules import each other relatively for that reason.
"""
