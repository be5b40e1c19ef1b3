"""The discrete-event simulator: the same admission, controllers and scheduler on a virtual clock."""

from lahar.sim.engine import Simulation
from lahar.sim.inputs import load_simulation_inputs

__all__ = ["Simulation", "load_simulation_inputs"]
