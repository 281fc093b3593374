"""The Harnesses that ship with thirdshift, one module each.

They live in a package of their own so that no module shares its name with the functions that
make a :class:`~thirdshift.harness.Choice` of them (``thirdshift.claude()``), which type
checkers would otherwise resolve to the module.
"""
