"""``batch``: grade a folder of submissions, each in a worker and a sandbox of its own.

``submissions`` finds the students' files (no link followed, names made safe),
``pool`` runs the workers and writes grades.csv, ``worker`` grades one student
(``python -m grader.commands.batch.worker``), ``signing`` makes the per-student
records tamper-evident, ``summary`` writes the TA's page, ``progress`` shows a line per finished
student above the progress bar.
"""
