"""The submission's gas beside the reference's: trajectories and their GIF/MP4/HTML rendering.

The submission's ``update`` runs in the sandbox; the reference's in the
grader's process, or, in the student kit (no reference code), comes from
the stored runs of the standard scenarios (reference_runs, data in
reference_data/). trajectories: recording and comparing runs; figure: the
figure and its fast GIF writer; render: the animate command, the feedback
pages' animation. It may import ``grader.spec``, ``grader.sandbox``,
``grader.properties`` and ``grader.reports``.
"""
