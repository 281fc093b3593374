"""The machine adapter: the real Outside, which owns every process a session starts."""

from thirdshift._machine.adapter import MachineOutside

__all__ = ["MachineOutside"]
