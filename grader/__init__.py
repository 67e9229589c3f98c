"""granular-grader: the autograder of the event-driven granular-gas homework.

The sub-packages are the layers of one flow; each imports only from the
layers before it (tests/test_layout.py checks it):

    spec        the contract: the six functions, limits, tolerances, rubric, scenarios
    sandbox     running the submission: isolation, the child, the wire format
    properties  what correct answers satisfy (Hypothesis), read from what the sandbox returned
    grading     properties → a graded result: the one grading function, the helper audit
    reports     results → what people read: terminal text, feedback pages, results.json
    animation   the submission's gas beside the reference's, as GIF/MP4/HTML
    commands    check, batch, animate, student-kit, nbgrader-course, gradescope-zip

``grader.errors`` holds the one error root every layer raises from.
"""
