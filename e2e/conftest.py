"""End-to-end tests: real processes, the fake CLIs on PATH, the thirdshift command."""
