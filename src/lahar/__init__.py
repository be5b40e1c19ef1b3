"""Lahar: queue-based batch scheduling for shared clusters.

A pure, deterministic core (resources, model, admission, controller, scheduler) inside thin
shells (store, server, runtime, simulator, CLI).
"""

__version__ = "0.1.0"
