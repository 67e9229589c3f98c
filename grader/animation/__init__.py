"""The submission's gas beside the reference's: trajectories and their GIF/MP4/HTML rendering.

The submission's ``update`` runs in the sandbox; the reference's in the
grader's process. It may import ``grader.spec``, ``grader.sandbox``,
``grader.properties`` and ``grader.reports``.
"""
