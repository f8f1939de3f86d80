"""Diagrams of a traced launch and a notebook explorer, drawn only from the simulator's trace.

    run = metalsim.simulate(kernel, ..., trace=True)
    metalsim.viz.draw(run, inputs=[a, b])          # a Diagram: shown inline by Jupyter
    metalsim.viz.draw(run).save("kernel.png")      # or .svg
    # a large launch: trace only the threadgroups the diagram will show
    groups = metalsim.viz.threadgroups_to_trace(metalsim.simulate(kernel, ...))
    metalsim.viz.draw(metalsim.simulate(kernel, ..., trace=groups))
    metalsim.viz.Explorer(run, inputs=[a, b])      # pick threadgroup, thread, barrier phase
"""

from metalsim.viz.draw import Selection, draw, threadgroups_to_trace
from metalsim.viz.explorer import Explorer, ListedAccess
from metalsim.viz.svg import Diagram

__all__ = ["Diagram", "Explorer", "ListedAccess", "Selection", "draw", "threadgroups_to_trace"]
