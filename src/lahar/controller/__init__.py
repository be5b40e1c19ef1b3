"""Controllers: queue lifecycle, commands, status refresh, job lifecycle. Events in, actions out."""
