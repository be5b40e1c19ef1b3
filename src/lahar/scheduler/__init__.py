"""The scheduler: Volcano's scheduling cycle (session, actions, plugins) as a pure function.

``lahar.scheduler.cycle.run_cycle(state, conf)`` runs one cycle over a ``ClusterState`` with a
``SchedulerConf`` and returns its decisions.
"""
